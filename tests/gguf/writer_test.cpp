// GgufWriter: round trips through the reader, validation, streaming, and a
// RapidCheck property over random metadata and tensors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstdio>
#include <filesystem>
#include <limits>

#include "hearth/gguf/gguf.h"
#include "test_util.h"

namespace hearth::gguf {
namespace {

using ::testing::HasSubstr;

std::vector<uint8_t> iota_bytes(size_t n, uint8_t start = 0) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(start + i * 7);
  return v;
}

GgufWriter sample_writer() {
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_u32("llama.block_count", 2);
  w.set_f32("llama.rope.freq_base", 10000.0f);
  w.set_bool("flag", true);
  w.set("tokens", Value::string_array({"<unk>", "<s>", "▁hello"}));
  w.set("scores", Value::f32_array({0.0f, -1.5f, 2.25f}));
  w.set("types", Value::i32_array({2, 3, 1}));
  EXPECT_TRUE(w.add_tensor("a", {32, 2}, TensorType::kF32, iota_bytes(256)).ok());
  EXPECT_TRUE(w.add_tensor("b", {64}, TensorType::kQ8_0, iota_bytes(68, 3)).ok());
  EXPECT_TRUE(w.add_tensor("c", {5}, TensorType::kF16, iota_bytes(10, 9)).ok());
  return w;
}

TEST(Writer, RoundTrip) {
  GgufWriter w = sample_writer();
  auto bytes = w.serialize();
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  auto f = GgufFile::parse(*bytes);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->architecture(), "llama");
  EXPECT_EQ(*f->get_u32("llama.block_count"), 2u);
  EXPECT_EQ(*f->get_f32("llama.rope.freq_base"), 10000.0f);
  EXPECT_TRUE(*f->get_bool("flag"));
  EXPECT_EQ(*f->get_string_array("tokens"), (std::vector<std::string>{"<unk>", "<s>", "▁hello"}));
  EXPECT_EQ(*f->get_f32_array("scores"), (std::vector<float>{0.0f, -1.5f, 2.25f}));
  EXPECT_EQ(*f->get_i32_array("types"), (std::vector<int32_t>{2, 3, 1}));
  ASSERT_EQ(f->tensors().size(), 3u);
  for (const auto& t : f->tensors()) {
    EXPECT_EQ(t.offset % 32, 0u) << t.name;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data) - reinterpret_cast<uintptr_t>(bytes->data()),
              f->data_offset() + t.offset);
  }
  const TensorInfo* b = f->tensor("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->type, TensorType::kQ8_0);
  EXPECT_EQ(std::vector<uint8_t>(b->data, b->data + b->n_bytes), iota_bytes(68, 3));
  EXPECT_EQ(bytes->size() % 32, 0u);
}

TEST(Writer, ReserializeIsByteIdentical) {
  auto bytes = sample_writer().serialize();
  ASSERT_TRUE(bytes.ok());
  auto f = GgufFile::parse(*bytes);
  ASSERT_TRUE(f.ok());
  GgufWriter w2;
  for (const auto& [k, v] : f->metadata()) w2.set(k, v);
  for (const auto& t : f->tensors()) {
    ASSERT_TRUE(
        w2.add_tensor(t.name, t.dims, t.type, std::vector<uint8_t>(t.data, t.data + t.n_bytes))
            .ok());
  }
  auto again = w2.serialize();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *bytes);
}

TEST(Writer, SetReplacesInPlace) {
  GgufWriter w;
  w.set_u32("a", 1);
  w.set_u32("b", 2);
  w.set_string("a", "x");
  auto f = GgufFile::parse(*w.serialize());
  ASSERT_TRUE(f.ok());
  ASSERT_EQ(f->metadata().size(), 2u);
  EXPECT_EQ(f->metadata()[0].first, "a");
  EXPECT_EQ(*f->get_string("a"), "x");
}

TEST(Writer, CustomAlignment) {
  GgufWriter w;
  w.set_u32("general.alignment", 256);
  ASSERT_TRUE(w.add_tensor("a", {3}, TensorType::kF32, iota_bytes(12)).ok());
  ASSERT_TRUE(w.add_tensor("b", {3}, TensorType::kF32, iota_bytes(12)).ok());
  auto bytes = w.serialize();
  ASSERT_TRUE(bytes.ok());
  auto f = GgufFile::parse(*bytes);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->alignment(), 256u);
  EXPECT_EQ(f->data_offset() % 256, 0u);
  EXPECT_EQ(f->tensor("b")->offset, 256u);
}

TEST(Writer, RejectsBadAlignment) {
  GgufWriter w;
  w.set_u32("general.alignment", 24);
  auto bytes = w.serialize();
  ASSERT_FALSE(bytes.ok());
  EXPECT_THAT(bytes.status().message(), HasSubstr("general.alignment"));
}

TEST(Writer, RejectsBadTensors) {
  GgufWriter w;
  EXPECT_THAT(w.add_tensor("x", {4}, TensorType::kF32, iota_bytes(15)).message(),
              HasSubstr("data holds 15 bytes, shape and type need 16"));
  EXPECT_THAT(w.add_tensor("x", {33}, TensorType::kQ4_0, iota_bytes(18)).message(),
              HasSubstr("not a multiple of the q4_0 block size 32"));
  EXPECT_THAT(w.add_tensor("x", {}, TensorType::kF32, {}).message(), HasSubstr("0 dims"));
  EXPECT_THAT(w.add_tensor("x", {1, 1, 1, 1, 1}, TensorType::kF32, iota_bytes(4)).message(),
              HasSubstr("5 dims"));
  EXPECT_THAT(w.add_tensor("x", {4}, static_cast<TensorType>(4), iota_bytes(16)).message(),
              HasSubstr("unknown ggml type id 4"));
  ASSERT_TRUE(w.add_tensor("x", {4}, TensorType::kF32, iota_bytes(16)).ok());
  EXPECT_THAT(w.add_tensor("x", {4}, TensorType::kF32, iota_bytes(16)).message(),
              HasSubstr("duplicate tensor name"));
  EXPECT_THAT(w.add_tensor("y", {uint64_t{1} << 62, 4}, TensorType::kF32, {}).message(),
              HasSubstr("overflows"));
}

TEST(Writer, RejectsInconsistentValues) {
  GgufWriter w;
  Value bad_array = Value::array(ValueType::kInt32, {Value::i32(1), Value::str("two")});
  w.set("mixed", bad_array);
  auto r = w.serialize();
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("array element 1 is string in an array of i32"));

  GgufWriter w2;
  Value too_big;
  too_big.type = ValueType::kUint8;
  too_big.data = uint64_t{300};
  w2.set("small", too_big);
  EXPECT_THAT(w2.serialize().status().message(), HasSubstr("300 does not fit in u8"));
}

TEST(Writer, DeferredTensorNeedsStreaming) {
  GgufWriter w;
  ASSERT_TRUE(w.add_tensor_spec("lazy", {8}, TensorType::kF32).ok());
  auto r = w.serialize();
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("write_file_streaming"));
}

TEST(Writer, StreamingMatchesSerialize) {
  GgufWriter eager = sample_writer();
  GgufWriter lazy;
  lazy.set_string("general.architecture", "llama");
  lazy.set_u32("llama.block_count", 2);
  lazy.set_f32("llama.rope.freq_base", 10000.0f);
  lazy.set_bool("flag", true);
  lazy.set("tokens", Value::string_array({"<unk>", "<s>", "▁hello"}));
  lazy.set("scores", Value::f32_array({0.0f, -1.5f, 2.25f}));
  lazy.set("types", Value::i32_array({2, 3, 1}));
  ASSERT_TRUE(lazy.add_tensor_spec("a", {32, 2}, TensorType::kF32).ok());
  ASSERT_TRUE(lazy.add_tensor("b", {64}, TensorType::kQ8_0, iota_bytes(68, 3)).ok());
  ASSERT_TRUE(lazy.add_tensor_spec("c", {5}, TensorType::kF16).ok());
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("hearth_stream_" + std::to_string(getpid()) + ".gguf"))
                               .string();
  std::vector<size_t> calls;
  Status st = lazy.write_file_streaming(path, [&](size_t i, std::span<uint8_t> dst) -> Status {
    calls.push_back(i);
    const auto src = i == 0 ? iota_bytes(256) : iota_bytes(10, 9);
    if (src.size() != dst.size()) return Internal("size mismatch");
    std::copy(src.begin(), src.end(), dst.begin());
    return OkStatus();
  });
  ASSERT_TRUE(st.ok()) << st.to_string();
  EXPECT_EQ(calls, (std::vector<size_t>{0, 2}));
  EXPECT_EQ(testing::read_bytes(path), *eager.serialize());
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  std::filesystem::remove(path);
}

TEST(Writer, StreamingFillErrorLeavesNoFile) {
  GgufWriter w;
  ASSERT_TRUE(w.add_tensor_spec("a", {4}, TensorType::kF32).ok());
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("hearth_fail_" + std::to_string(getpid()) + ".gguf"))
                               .string();
  Status st = w.write_file_streaming(
      path, [](size_t, std::span<uint8_t>) -> Status { return Internal("generator broke"); });
  EXPECT_THAT(st.message(), HasSubstr("generator broke"));
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

// ---- property test ----

Value random_scalar(ValueType t) {
  Value v;
  v.type = t;
  switch (t) {
    case ValueType::kUint8:
      v.data = uint64_t{*rc::gen::arbitrary<uint8_t>()};
      break;
    case ValueType::kUint16:
      v.data = uint64_t{*rc::gen::arbitrary<uint16_t>()};
      break;
    case ValueType::kUint32:
      v.data = uint64_t{*rc::gen::arbitrary<uint32_t>()};
      break;
    case ValueType::kUint64:
      v.data = *rc::gen::arbitrary<uint64_t>();
      break;
    case ValueType::kInt8:
      v.data = int64_t{*rc::gen::arbitrary<int8_t>()};
      break;
    case ValueType::kInt16:
      v.data = int64_t{*rc::gen::arbitrary<int16_t>()};
      break;
    case ValueType::kInt32:
      v.data = int64_t{*rc::gen::arbitrary<int32_t>()};
      break;
    case ValueType::kInt64:
      v.data = *rc::gen::arbitrary<int64_t>();
      break;
    // Finite values only: a signalling NaN cannot survive float -> double -> float.
    case ValueType::kFloat32:
      v.data =
          static_cast<double>(static_cast<float>(*rc::gen::inRange(-1000000, 1000000)) / 64.0f);
      break;
    case ValueType::kFloat64:
      v.data = *rc::gen::inRange(-1000000, 1000000) / 3.0;
      break;
    case ValueType::kBool:
      v.data = *rc::gen::arbitrary<bool>();
      break;
    case ValueType::kString:
      v.data = *rc::gen::arbitrary<std::string>();
      break;
    case ValueType::kArray:
      break;
  }
  return v;
}

Value random_value() {
  auto t = static_cast<ValueType>(*rc::gen::inRange(0, 13));
  if (t != ValueType::kArray) return random_scalar(t);
  auto elem = static_cast<ValueType>(*rc::gen::inRange(0, 13));
  const int n = *rc::gen::inRange(0, 6);
  std::vector<Value> elems;
  for (int i = 0; i < n; ++i) {
    if (elem == ValueType::kArray) {
      // Nested arrays hold scalars or strings: every array in one array shares its type.
      auto inner_type = static_cast<ValueType>(*rc::gen::inRange(0, 9));
      std::vector<Value> inner;
      const int m = *rc::gen::inRange(0, 4);
      for (int j = 0; j < m; ++j) inner.push_back(random_scalar(inner_type));
      elems.push_back(Value::array(inner_type, std::move(inner)));
    } else {
      elems.push_back(random_scalar(elem));
    }
  }
  return Value::array(elem, std::move(elems));
}

RC_GTEST_PROP(WriterProperty, SerializeParsesBackIdentically, ()) {
  GgufWriter w;
  std::vector<std::pair<std::string, Value>> expected_kv;
  const int n_kv = *rc::gen::inRange(0, 12);
  for (int i = 0; i < n_kv; ++i) {
    std::string key = "k";
    key += std::to_string(i);
    key += '.';
    key += *rc::gen::arbitrary<std::string>();
    if (key == "general.alignment") continue;
    Value v = random_value();
    w.set(key, v);
    expected_kv.emplace_back(key, v);
  }
  const bool custom_alignment = *rc::gen::arbitrary<bool>();
  uint32_t alignment = 32;
  if (custom_alignment) {
    alignment = 1u << *rc::gen::inRange(0, 9);
    w.set_u32("general.alignment", alignment);
    expected_kv.emplace_back("general.alignment", Value::u32(alignment));
  }
  const TensorType types[] = {TensorType::kF32,  TensorType::kF16,  TensorType::kBF16,
                              TensorType::kQ8_0, TensorType::kQ4_0, TensorType::kQ4_K,
                              TensorType::kQ6_K, TensorType::kI32,  TensorType::kIQ4_NL};
  struct Expected {
    std::string name;
    std::vector<uint64_t> dims;
    TensorType type;
    std::vector<uint8_t> data;
  };
  std::vector<Expected> expected_tensors;
  const int n_tensors = *rc::gen::inRange(0, 6);
  for (int i = 0; i < n_tensors; ++i) {
    const TensorType t = types[*rc::gen::inRange<size_t>(0, std::size(types))];
    const TypeTraits* tr = type_traits(t);
    std::vector<uint64_t> dims;
    const int n_dims = *rc::gen::inRange(1, 5);
    dims.push_back(uint64_t{tr->block_size} * *rc::gen::inRange(0, 4));
    for (int d = 1; d < n_dims; ++d) dims.push_back(*rc::gen::inRange(1, 4));
    uint64_t bytes = row_bytes(t, dims[0]);
    for (int d = 1; d < n_dims; ++d) bytes *= dims[d];
    std::vector<uint8_t> data(bytes);
    for (auto& b : data) b = static_cast<uint8_t>(*rc::gen::arbitrary<uint8_t>());
    std::string name = "t";
    name += std::to_string(i);
    RC_ASSERT(w.add_tensor(name, dims, t, data).ok());
    expected_tensors.push_back({name, dims, t, data});
  }
  auto bytes = w.serialize();
  RC_ASSERT(bytes.ok());
  auto f = GgufFile::parse(*bytes);
  RC_ASSERT(f.ok());
  RC_ASSERT(f->alignment() == alignment);
  RC_ASSERT(f->metadata().size() == expected_kv.size());
  for (size_t i = 0; i < expected_kv.size(); ++i) {
    RC_ASSERT(f->metadata()[i].first == expected_kv[i].first);
    RC_ASSERT(f->metadata()[i].second == expected_kv[i].second);
  }
  RC_ASSERT(f->tensors().size() == expected_tensors.size());
  for (size_t i = 0; i < expected_tensors.size(); ++i) {
    const TensorInfo& t = f->tensors()[i];
    RC_ASSERT(t.name == expected_tensors[i].name);
    RC_ASSERT(t.dims == expected_tensors[i].dims);
    RC_ASSERT(t.type == expected_tensors[i].type);
    RC_ASSERT(t.offset % alignment == 0);
    RC_ASSERT(std::vector<uint8_t>(t.data, t.data + t.n_bytes) == expected_tensors[i].data);
  }
}

}  // namespace
}  // namespace hearth::gguf
