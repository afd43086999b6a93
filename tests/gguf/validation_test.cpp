// One test per reader validation rule: each malformed image must be rejected with a
// message naming the field and the byte offset.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>

#include "byte_builder.h"
#include "hearth/gguf/gguf.h"

namespace hearth::gguf {
namespace {

using testing::ByteBuilder;
using ::testing::HasSubstr;

Status parse_status(const ByteBuilder& b) {
  auto f = GgufFile::parse(b.bytes());
  return f.ok() ? OkStatus() : f.status();
}

#define EXPECT_REJECTED(builder, ...)                                 \
  do {                                                                \
    Status st_ = parse_status(builder);                               \
    ASSERT_FALSE(st_.ok()) << "accepted a malformed file";            \
    for (const char* part : {__VA_ARGS__}) {                          \
      EXPECT_THAT(st_.message(), HasSubstr(part)) << st_.to_string(); \
    }                                                                 \
  } while (0)

// A valid file with one 32-float F32 tensor; tests patch it.
ByteBuilder one_tensor(uint32_t type = 0, std::vector<uint64_t> dims = {32}, uint64_t offset = 0,
                       size_t data_bytes = 128) {
  ByteBuilder b;
  b.header(1, 1).kv_str("general.architecture", "llama");
  b.tensor_info("w", std::move(dims), type, offset).pad_to(32).zeros(data_bytes);
  return b;
}

TEST(Validation, BaselineIsAccepted) {
  auto f = GgufFile::parse(one_tensor().bytes());
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->tensors().size(), 1u);
  EXPECT_EQ(f->tensors()[0].n_bytes, 128u);
  EXPECT_EQ(f->data_offset() % 32, 0u);
}

TEST(Validation, TooShortForMagic) {
  ByteBuilder b;
  b.u8('G').u8('G');
  EXPECT_REJECTED(b, "too short", "byte 0");
}

TEST(Validation, EmptyFile) {
  EXPECT_REJECTED(ByteBuilder(), "0 bytes");
}

TEST(Validation, BadMagic) {
  ByteBuilder b;
  b.u32(0x12345678).u32(3).u64(0).u64(0);
  EXPECT_REJECTED(b, "not a GGUF file", "magic", "byte 0");
}

TEST(Validation, Version1RejectedByName) {
  ByteBuilder b;
  b.header(0, 0, 1);
  auto f = GgufFile::parse(b.bytes());
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), ErrorCode::kUnsupported);
  EXPECT_THAT(f.status().message(), HasSubstr("GGUF version 1 is not supported"));
}

TEST(Validation, FutureVersion) {
  ByteBuilder b;
  b.header(0, 0, 4);
  EXPECT_REJECTED(b, "GGUF version 4", "byte 4");
}

TEST(Validation, BigEndian) {
  ByteBuilder b;
  b.header(0, 0, 0x03000000);
  EXPECT_REJECTED(b, "big-endian");
}

TEST(Validation, TruncatedCounts) {
  ByteBuilder b;
  b.u32(0x46554747).u32(3).u32(0);
  EXPECT_REJECTED(b, "tensor count", "byte 8", "needs 8 bytes");
}

TEST(Validation, HugeKvCount) {
  ByteBuilder b;
  b.header(0, std::numeric_limits<uint64_t>::max());
  EXPECT_REJECTED(b, "metadata count", "byte 16", "cannot fit");
}

TEST(Validation, HugeTensorCount) {
  ByteBuilder b;
  b.header(uint64_t{1} << 60, 0);
  EXPECT_REJECTED(b, "tensor count", "byte 8", "cannot fit");
}

TEST(Validation, TensorCountTooLargeForWhatFollowsMetadata) {
  ByteBuilder b;
  b.header(2, 1).kv_str("general.architecture", "llama").zeros(40);
  EXPECT_REJECTED(b, "tensor count", "left after the metadata");
}

TEST(Validation, HugeKeyLength) {
  ByteBuilder b;
  b.header(0, 1).u64(uint64_t{1} << 62).u32(4).u32(0);
  EXPECT_REJECTED(b, "metadata key #0", "byte 24", "string length");
}

TEST(Validation, HugeStringValueLength) {
  ByteBuilder b;
  b.header(0, 1).str("general.name").u32(8).u64(1000).zeros(4);
  EXPECT_REJECTED(b, "metadata key 'general.name'", "string length 1000");
}

TEST(Validation, UnknownValueType) {
  ByteBuilder b;
  b.header(0, 1).str("k").u32(13).u32(0);
  EXPECT_REJECTED(b, "metadata key 'k'", "unknown value type id 13");
}

TEST(Validation, BoolOutOfRange) {
  ByteBuilder b;
  b.header(0, 1).str("flag").u32(7).u8(2).zeros(12);
  EXPECT_REJECTED(b, "metadata key 'flag'", "bool byte is 2");
}

TEST(Validation, HugeArrayCount) {
  ByteBuilder b;
  b.header(0, 1).str("arr").u32(9).u32(4).u64(uint64_t{1} << 61).zeros(16);
  EXPECT_REJECTED(b, "metadata key 'arr'", "array of", "cannot fit", "byte 43");
}

TEST(Validation, HugeStringArrayCountBoundByMinimumElementSize) {
  ByteBuilder b;
  // 3 strings need at least 24 bytes; only 16 follow.
  b.header(0, 1).str("arr").u32(9).u32(8).u64(3).zeros(16);
  EXPECT_REJECTED(b, "array of 3 string elements cannot fit");
}

TEST(Validation, UnknownArrayElementType) {
  ByteBuilder b;
  b.header(0, 1).str("arr").u32(9).u32(42).u64(0);
  EXPECT_REJECTED(b, "metadata key 'arr'", "unknown array element type id 42");
}

TEST(Validation, ArrayStringElementTruncated) {
  ByteBuilder b;
  b.header(0, 1).str("arr").u32(9).u32(8).u64(2).str("ok").u64(500).zeros(4);
  EXPECT_REJECTED(b, "metadata key 'arr'", "string length 500", "array element 1");
}

TEST(Validation, NestingTooDeep) {
  ByteBuilder b;
  b.header(0, 1).str("deep").u32(9);
  for (int i = 0; i < 12; ++i) b.u32(9).u64(1);
  b.u32(4).u64(0);
  b.zeros(16);
  EXPECT_REJECTED(b, "metadata key 'deep'", "nested deeper than 8");
}

TEST(Validation, NestedArraysWithinLimitAreAccepted) {
  ByteBuilder b;
  b.header(0, 1).str("nested").u32(9).u32(9).u64(2);
  b.u32(4).u64(2).u32(7).u32(8);
  b.u32(8).u64(1).str("x");
  auto f = GgufFile::parse(b.bytes());
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  const auto* outer = f->find("nested")->as_array();
  ASSERT_NE(outer, nullptr);
  ASSERT_EQ(outer->size(), 2u);
  EXPECT_EQ(*(*(*outer)[0].as_array())[1].as_u64(), 8u);
  EXPECT_EQ(*(*(*outer)[1].as_array())[0].as_string(), "x");
}

TEST(Validation, DuplicateKey) {
  ByteBuilder b;
  b.header(0, 2).kv_u32("a", 1).kv_u32("a", 2);
  EXPECT_REJECTED(b, "metadata key 'a'", "duplicate key", "byte 41");
}

TEST(Validation, AlignmentNotPowerOfTwo) {
  ByteBuilder b;
  b.header(0, 1).kv_u32("general.alignment", 48);
  EXPECT_REJECTED(b, "general.alignment", "byte 24", "not a non-zero power of two");
}

TEST(Validation, AlignmentZero) {
  ByteBuilder b;
  b.header(0, 1).kv_u32("general.alignment", 0);
  EXPECT_REJECTED(b, "general.alignment", "not a non-zero power of two");
}

TEST(Validation, AlignmentWrongType) {
  ByteBuilder b;
  b.header(0, 1).kv_str("general.alignment", "32");
  EXPECT_REJECTED(b, "general.alignment", "expected an integer");
}

TEST(Validation, CustomAlignmentIsHonoured) {
  ByteBuilder b;
  b.header(1, 1).kv_u32("general.alignment", 64).tensor_info("w", {16}, 0, 0).pad_to(64).zeros(64);
  auto f = GgufFile::parse(b.bytes());
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->alignment(), 64u);
  EXPECT_EQ(f->data_offset() % 64, 0u);
}

TEST(Validation, ZeroDims) {
  EXPECT_REJECTED(one_tensor(0, {}), "tensor 'w' (info at byte 69)", "n_dims 0");
}

TEST(Validation, TooManyDims) {
  EXPECT_REJECTED(one_tensor(0, {1, 1, 1, 1, 32}), "tensor 'w'", "n_dims 5 must be 1..4");
}

TEST(Validation, DimensionProductOverflow) {
  EXPECT_REJECTED(one_tensor(0, {uint64_t{1} << 40, uint64_t{1} << 40}), "tensor 'w'", "ne[1]",
                  "overflows");
}

TEST(Validation, DimensionAboveInt64) {
  EXPECT_REJECTED(one_tensor(0, {uint64_t{1} << 63}), "ne[0]", "exceeds INT64_MAX");
}

TEST(Validation, ByteSizeOverflow) {
  // 2^62 f64 elements fit in int64 but need 2^65 bytes.
  EXPECT_REJECTED(one_tensor(28, {uint64_t{1} << 62}), "tensor 'w'", "byte size overflows");
}

TEST(Validation, UnknownTensorType) {
  auto st = parse_status(one_tensor(4));
  EXPECT_EQ(st.code(), ErrorCode::kUnsupported);
  EXPECT_THAT(st.message(), HasSubstr("unknown ggml type id 4"));
  EXPECT_THAT(parse_status(one_tensor(1000)).message(), HasSubstr("unknown ggml type id 1000"));
}

TEST(Validation, BlockSizeDivisibility) {
  EXPECT_REJECTED(one_tensor(2, {33}), "tensor 'w'", "ne[0] = 33", "q4_0 block size 32");
  EXPECT_REJECTED(one_tensor(12, {128}), "ne[0] = 128", "q4_K block size 256");
}

TEST(Validation, OffsetNotAligned) {
  EXPECT_REJECTED(one_tensor(0, {32}, 4), "tensor 'w' (info at byte 69)",
                  "offset 4 not aligned to 32");
}

TEST(Validation, DataPastEndOfFile) {
  EXPECT_REJECTED(one_tensor(0, {32}, 0, 100), "tensor 'w'", "runs past the end");
  EXPECT_REJECTED(one_tensor(0, {32}, 1u << 20), "runs past the end");
  EXPECT_REJECTED(one_tensor(0, {32}, ~uint64_t{31}), "runs past the end");
}

TEST(Validation, OverlappingTensors) {
  ByteBuilder b;
  b.header(2, 0).tensor_info("a", {32}, 0, 0).tensor_info("b", {32}, 0, 64).pad_to(32).zeros(192);
  EXPECT_REJECTED(b, "tensor 'b'", "overlaps tensor 'a'");
}

TEST(Validation, DuplicateTensorName) {
  ByteBuilder b;
  b.header(2, 0).tensor_info("a", {8}, 0, 0).tensor_info("a", {8}, 0, 32).pad_to(32).zeros(64);
  EXPECT_REJECTED(b, "tensor 'a'", "duplicate tensor name");
}

TEST(Validation, TruncatedTensorInfo) {
  ByteBuilder b;
  b.header(1, 0).str("w").u32(1).u64(4).zeros(11);  // the offset is 4 bytes short
  EXPECT_REJECTED(b, "tensor 'w' (info at byte 24) offset", "needs 8 bytes");
}

TEST(Validation, VocabOnlyFileWithoutDataSection) {
  ByteBuilder b;
  b.header(0, 1).kv_str("tokenizer.ggml.model", "llama");  // no padding at all
  auto f = GgufFile::parse(b.bytes());
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_TRUE(f->tensors().empty());
}

TEST(Validation, ZeroSizedTensorIsAccepted) {
  ByteBuilder b;
  b.header(1, 0).tensor_info("empty", {0, 4}, 0, 0);
  auto f = GgufFile::parse(b.bytes());
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->tensors()[0].n_bytes, 0u);
}

TEST(Validation, Version2IsRead) {
  ByteBuilder b;
  b.header(0, 1, 2).kv_u32("x", 7);
  auto f = GgufFile::parse(b.bytes());
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->version(), 2u);
  EXPECT_EQ(*f->get_u32("x"), 7u);
}

TEST(Validation, OpenMissingFileIsIoError) {
  auto f = GgufFile::open("/nonexistent/dir/model.gguf");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), ErrorCode::kIo);
  EXPECT_THAT(f.status().message(), HasSubstr("/nonexistent/dir/model.gguf"));
}

}  // namespace
}  // namespace hearth::gguf
