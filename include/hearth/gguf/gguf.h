// GGUF container: a validating, mmap-backed reader and a writer.
//
// Reader: GgufFile::open() maps the file read-only and validates every count,
// length, offset, type id and dimension product against the file size before
// touching memory. Malformed input yields an error naming the field and the byte
// offset; it never crashes, hangs, or allocates from an unchecked count.
// Versions 2 and 3 are read; version 1 is rejected by name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "hearth/status.h"

namespace hearth {
class MappedFile;
}

namespace hearth::gguf {

// Metadata value type ids as stored in the file.
enum class ValueType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};
const char* value_type_name(ValueType t);

// ggml tensor type ids as stored in the file.
enum class TensorType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ2_XXS = 16,
  kIQ2_XS = 17,
  kIQ3_XXS = 18,
  kIQ1_S = 19,
  kIQ4_NL = 20,
  kIQ3_S = 21,
  kIQ2_S = 22,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kIQ1_M = 29,
  kBF16 = 30,
  kTQ1_0 = 34,
  kTQ2_0 = 35,
};

struct TypeTraits {
  const char* name;     // "q4_K", "f16", ... (ggml's spelling)
  uint32_t block_size;  // elements per block (1 for plain types)
  uint32_t type_size;   // bytes per block
  bool quantized;
};
// Traits of a known type id, or nullptr for an id hearth does not know.
const TypeTraits* type_traits(TensorType t);
const TypeTraits* type_traits(uint32_t raw_type_id);
std::string tensor_type_name(TensorType t);
// Bytes of a row of n elements; n must be a multiple of the block size.
uint64_t row_bytes(TensorType t, uint64_t n);

// One metadata value. Arrays hold their element type and elements (arrays may nest).
struct Value {
  ValueType type = ValueType::kUint32;
  ValueType array_type = ValueType::kUint8;  // element type when type == kArray
  std::variant<uint64_t, int64_t, double, bool, std::string, std::vector<Value>> data;

  static Value u32(uint32_t v);
  static Value i32(int32_t v);
  static Value u64(uint64_t v);
  static Value f32(float v);
  static Value boolean(bool v);
  static Value str(std::string v);
  static Value array(ValueType elem, std::vector<Value> elems);
  static Value string_array(const std::vector<std::string>& v);
  static Value f32_array(const std::vector<float>& v);
  static Value i32_array(const std::vector<int32_t>& v);

  bool is_integer() const;
  bool is_float() const;
  // Typed reads; the error names the expected and actual types.
  Result<uint64_t> as_u64() const;  // any integer >= 0
  Result<int64_t> as_i64() const;   // any integer that fits
  Result<double> as_f64() const;    // any float or integer
  Result<bool> as_bool() const;
  Result<std::string_view> as_string() const;
  const std::vector<Value>* as_array() const;  // nullptr unless an array

  bool operator==(const Value& other) const;
};

struct TensorInfo {
  std::string name;
  std::vector<uint64_t> dims;  // ne[0] first (the contiguous dimension), as in the file
  TensorType type = TensorType::kF32;
  uint64_t offset = 0;  // relative to the start of the data section
  uint64_t n_elements = 0;
  uint64_t n_bytes = 0;
  const uint8_t* data = nullptr;  // into the mapping; valid while the GgufFile lives
};

class GgufFile {
 public:
  GgufFile();
  ~GgufFile();
  GgufFile(GgufFile&&) noexcept;
  GgufFile& operator=(GgufFile&&) noexcept;

  // Maps and validates a file.
  static Result<GgufFile> open(const std::string& path);
  // Validates bytes the caller owns (they must outlive the result). For tests and fuzzing.
  static Result<GgufFile> parse(std::span<const uint8_t> bytes);

  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // absolute file offset of tensor data
  size_t file_size() const { return bytes_.size(); }
  std::span<const uint8_t> bytes() const { return bytes_; }
  const std::string& path() const { return path_; }

  // Metadata in file order.
  const std::vector<std::pair<std::string, Value>>& metadata() const { return kv_; }
  const Value* find(std::string_view key) const;
  bool has(std::string_view key) const { return find(key) != nullptr; }

  // Typed getters: NotFound if absent, InvalidArgument naming the key on a type mismatch.
  Result<uint64_t> get_u64(std::string_view key) const;
  Result<uint32_t> get_u32(std::string_view key) const;
  Result<int64_t> get_i64(std::string_view key) const;
  Result<float> get_f32(std::string_view key) const;
  Result<bool> get_bool(std::string_view key) const;
  Result<std::string> get_string(std::string_view key) const;
  Result<std::vector<std::string>> get_string_array(std::string_view key) const;
  Result<std::vector<float>> get_f32_array(std::string_view key) const;
  Result<std::vector<int32_t>> get_i32_array(std::string_view key) const;
  // Absent -> fallback; present with the wrong type -> error.
  Result<uint64_t> get_u64_or(std::string_view key, uint64_t fallback) const;
  Result<float> get_f32_or(std::string_view key, float fallback) const;
  Result<bool> get_bool_or(std::string_view key, bool fallback) const;

  // general.architecture, or "" when absent.
  std::string architecture() const;

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* tensor(std::string_view name) const;

 private:
  friend class Parser;
  std::shared_ptr<MappedFile> mapping_;
  std::span<const uint8_t> bytes_;
  std::string path_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, Value>> kv_;
  std::vector<TensorInfo> tensors_;
};

// Writes GGUF v3. Metadata keeps insertion order (set() on an existing key replaces
// it in place); tensor data is aligned to general.alignment (default 32).
class GgufWriter {
 public:
  void set(std::string key, Value value);
  void set_u32(std::string key, uint32_t v) { set(std::move(key), Value::u32(v)); }
  void set_f32(std::string key, float v) { set(std::move(key), Value::f32(v)); }
  void set_bool(std::string key, bool v) { set(std::move(key), Value::boolean(v)); }
  void set_string(std::string key, std::string v) { set(std::move(key), Value::str(std::move(v))); }

  // Data must hold exactly row_bytes(type, dims[0]) * product(dims[1..]) bytes.
  Status add_tensor(std::string name, std::vector<uint64_t> dims, TensorType type,
                    std::vector<uint8_t> data);

  // Declares a tensor whose bytes are produced only at write time, by
  // write_file_streaming(): models too large to hold in memory (twice) stream out.
  Status add_tensor_spec(std::string name, std::vector<uint64_t> dims, TensorType type);

  // The whole file image. Fails if a tensor was declared with add_tensor_spec().
  Result<std::vector<uint8_t>> serialize() const;
  // Writes path.tmp, fsyncs, renames to path.
  Status write_file(const std::string& path) const;

  // Fills dst (exactly the tensor's byte size) with the data of tensor number `index`
  // (in add order). Called once per add_tensor_spec() tensor, in file order.
  using TensorFiller = std::function<Status(size_t index, std::span<uint8_t> dst)>;
  // Like write_file(), but tensor data is written one tensor at a time; tensors added
  // with data are copied, tensors added with add_tensor_spec() come from fill.
  Status write_file_streaming(const std::string& path, const TensorFiller& fill) const;

  size_t tensor_count() const { return tensors_.size(); }

 private:
  struct PendingTensor {
    std::string name;
    std::vector<uint64_t> dims;
    TensorType type;
    std::vector<uint8_t> data;
    uint64_t n_bytes = 0;
    bool deferred = false;  // bytes come from a TensorFiller
  };
  Status check_tensor(const std::string& name, const std::vector<uint64_t>& dims, TensorType type,
                      uint64_t* n_bytes) const;
  // Header, metadata and tensor infos, padded to the alignment; offsets[i] is tensor
  // i's offset within the data section.
  Result<std::vector<uint8_t>> serialize_header(std::vector<uint64_t>* offsets,
                                                uint64_t* alignment) const;
  std::vector<std::pair<std::string, Value>> kv_;
  std::vector<PendingTensor> tensors_;
};

}  // namespace hearth::gguf
