// GGUF reader. Every count, length, offset and type id is checked against the bytes
// that remain before anything is allocated or dereferenced; errors name the field
// and the byte offset where it was read.
#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <limits>
#include <unordered_set>

#include "gguf/format.h"
#include "hearth/gguf/gguf.h"
#include "hearth/mapped_file.h"

static_assert(std::endian::native == std::endian::little,
              "the GGUF reader assumes a little-endian host");

namespace hearth::gguf {
namespace {

// Bounds the memory the metadata can cost: every parsed element is a Value (~48
// bytes), so without a cap a corrupted count in a large file could demand tens of GB.
constexpr uint64_t kMaxMetadataValues = uint64_t{1} << 23;
// Largest up-front reserve() taken from a count read from the file.
constexpr uint64_t kReserveCap = uint64_t{1} << 16;

std::string at(uint64_t pos) {
  return " (at byte " + std::to_string(pos) + ")";
}

bool is_power_of_two(uint64_t v) {
  return v != 0 && (v & (v - 1)) == 0;
}

}  // namespace

class Parser {
 public:
  explicit Parser(std::span<const uint8_t> bytes) : b_(bytes) {}

  Status run(GgufFile& f);

 private:
  uint64_t remaining() const { return b_.size() - pos_; }

  // Fails unless n more bytes exist; `what` names the field being read.
  Status need(uint64_t n, const std::string& what) const {
    if (n > remaining()) {
      return DataLoss(what + at(pos_) + ": needs " + std::to_string(n) + " bytes but only " +
                      std::to_string(remaining()) + " remain in the " + std::to_string(b_.size()) +
                      "-byte file");
    }
    return OkStatus();
  }

  template <typename T>
  Result<T> read(const std::string& what) {
    HEARTH_RETURN_IF_ERROR(need(sizeof(T), what));
    T v;
    std::memcpy(&v, b_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  Result<std::string> read_string(const std::string& what) {
    const uint64_t start = pos_;
    HEARTH_ASSIGN_OR_RETURN(uint64_t len, read<uint64_t>(what + " length"));
    if (len > remaining()) {
      return DataLoss(what + at(start) + ": string length " + std::to_string(len) +
                      " exceeds the " + std::to_string(remaining()) + " bytes that remain");
    }
    std::string s(reinterpret_cast<const char*>(b_.data() + pos_), static_cast<size_t>(len));
    pos_ += len;
    return s;
  }

  Status read_value(uint32_t type_id, int depth, const std::string& what, Value& out);
  Status read_header(GgufFile& f, uint64_t& n_tensors, uint64_t& n_kv);
  Status read_metadata(GgufFile& f, uint64_t n_kv);
  Status read_tensor_info(GgufFile& f, uint64_t index, std::unordered_set<std::string>& names);
  Status resolve_alignment(GgufFile& f);
  Status place_tensors(GgufFile& f);

  std::span<const uint8_t> b_;
  uint64_t pos_ = 0;
  uint64_t values_parsed_ = 0;
  std::vector<uint64_t> kv_offsets_;    // byte offset of each key, for error messages
  std::vector<uint64_t> info_offsets_;  // byte offset of each tensor info
};

Status Parser::read_value(uint32_t type_id, int depth, const std::string& what, Value& out) {
  if (++values_parsed_ > kMaxMetadataValues) {
    return ResourceExhausted(what + at(pos_) + ": more than " + std::to_string(kMaxMetadataValues) +
                             " metadata values in one file");
  }
  const uint64_t start = pos_;
  switch (type_id) {
    case 0: {
      HEARTH_ASSIGN_OR_RETURN(uint8_t v, read<uint8_t>(what));
      out.data = static_cast<uint64_t>(v);
      break;
    }
    case 1: {
      HEARTH_ASSIGN_OR_RETURN(int8_t v, read<int8_t>(what));
      out.data = static_cast<int64_t>(v);
      break;
    }
    case 2: {
      HEARTH_ASSIGN_OR_RETURN(uint16_t v, read<uint16_t>(what));
      out.data = static_cast<uint64_t>(v);
      break;
    }
    case 3: {
      HEARTH_ASSIGN_OR_RETURN(int16_t v, read<int16_t>(what));
      out.data = static_cast<int64_t>(v);
      break;
    }
    case 4: {
      HEARTH_ASSIGN_OR_RETURN(uint32_t v, read<uint32_t>(what));
      out.data = static_cast<uint64_t>(v);
      break;
    }
    case 5: {
      HEARTH_ASSIGN_OR_RETURN(int32_t v, read<int32_t>(what));
      out.data = static_cast<int64_t>(v);
      break;
    }
    case 6: {
      HEARTH_ASSIGN_OR_RETURN(float v, read<float>(what));
      out.data = static_cast<double>(v);
      break;
    }
    case 7: {
      HEARTH_ASSIGN_OR_RETURN(uint8_t v, read<uint8_t>(what));
      if (v > 1) {
        return DataLoss(what + at(start) + ": bool byte is " + std::to_string(v) +
                        ", must be 0 or 1");
      }
      out.data = v == 1;
      break;
    }
    case 8: {
      HEARTH_ASSIGN_OR_RETURN(std::string s, read_string(what));
      out.data = std::move(s);
      break;
    }
    case 9: {
      if (depth >= kMaxArrayDepth) {
        return DataLoss(what + at(start) + ": arrays nested deeper than " +
                        std::to_string(kMaxArrayDepth) + " levels");
      }
      HEARTH_ASSIGN_OR_RETURN(uint32_t elem_type, read<uint32_t>(what + " element type"));
      if (elem_type > 12) {
        return DataLoss(what + at(start) + ": unknown array element type id " +
                        std::to_string(elem_type));
      }
      const uint64_t count_pos = pos_;
      HEARTH_ASSIGN_OR_RETURN(uint64_t count, read<uint64_t>(what + " element count"));
      // Smallest possible encoding of one element: a scalar's size, a string's
      // 8-byte length, an array's 4-byte type + 8-byte count.
      uint64_t min_elem = scalar_size(elem_type);
      if (elem_type == 8) min_elem = 8;
      if (elem_type == 9) min_elem = 12;
      if (count > remaining() / min_elem) {
        return DataLoss(what + at(count_pos) + ": array of " + std::to_string(count) + " " +
                        value_type_name(static_cast<ValueType>(elem_type)) +
                        " elements cannot fit in the " + std::to_string(remaining()) +
                        " bytes that remain");
      }
      if (count > kMaxMetadataValues) {
        return ResourceExhausted(what + at(count_pos) + ": array of " + std::to_string(count) +
                                 " elements exceeds the limit of " +
                                 std::to_string(kMaxMetadataValues));
      }
      std::vector<Value> elems;
      // Bounded by the checks above, and capped again so that a corrupted count
      // costs no large up-front allocation; real elements grow the vector as read.
      elems.reserve(static_cast<size_t>(std::min<uint64_t>(count, kReserveCap)));
      for (uint64_t i = 0; i < count; ++i) {
        Value e;
        e.type = static_cast<ValueType>(elem_type);
        Status st = read_value(elem_type, depth + 1, what, e);
        if (!st.ok()) {
          return Status(st.code(), st.message() + " [array element " + std::to_string(i) + "]");
        }
        elems.push_back(std::move(e));
      }
      out.array_type = static_cast<ValueType>(elem_type);
      out.data = std::move(elems);
      break;
    }
    case 10: {
      HEARTH_ASSIGN_OR_RETURN(uint64_t v, read<uint64_t>(what));
      out.data = v;
      break;
    }
    case 11: {
      HEARTH_ASSIGN_OR_RETURN(int64_t v, read<int64_t>(what));
      out.data = v;
      break;
    }
    case 12: {
      HEARTH_ASSIGN_OR_RETURN(double v, read<double>(what));
      out.data = v;
      break;
    }
    default:
      return DataLoss(what + at(start) + ": unknown value type id " + std::to_string(type_id));
  }
  out.type = static_cast<ValueType>(type_id);
  return OkStatus();
}

Status Parser::read_header(GgufFile& f, uint64_t& n_tensors, uint64_t& n_kv) {
  if (b_.size() < 4) {
    return DataLoss("file is " + std::to_string(b_.size()) +
                    " bytes, too short for the GGUF magic (at byte 0)");
  }
  HEARTH_ASSIGN_OR_RETURN(uint32_t magic, read<uint32_t>("magic"));
  if (magic != kMagic) {
    char hex[16];
    std::snprintf(hex, sizeof(hex), "0x%08x", magic);
    return InvalidArgument(std::string("not a GGUF file: magic (at byte 0) is ") + hex +
                           ", expected \"GGUF\"");
  }
  HEARTH_ASSIGN_OR_RETURN(uint32_t version, read<uint32_t>("version"));
  if (version == 1) {
    return Unsupported(
        "GGUF version 1 is not supported (version field at byte 4); hearth reads GGUF "
        "versions 2 and 3: re-convert the model with a current converter");
  }
  if (version < kMinVersion || version > kMaxVersion) {
    const uint32_t swapped = __builtin_bswap32(version);
    if (swapped >= 1 && swapped <= kMaxVersion) {
      return Unsupported("big-endian GGUF (version field at byte 4 reads " +
                         std::to_string(swapped) + " byte-swapped) is not supported");
    }
    return Unsupported("GGUF version " + std::to_string(version) +
                       " (at byte 4) is not supported; hearth reads versions 2 and 3");
  }
  f.version_ = version;
  const uint64_t nt_pos = pos_;
  HEARTH_ASSIGN_OR_RETURN(n_tensors, read<uint64_t>("tensor count"));
  const uint64_t nkv_pos = pos_;
  HEARTH_ASSIGN_OR_RETURN(n_kv, read<uint64_t>("metadata count"));
  // Smallest key/value: 8-byte key length + 4-byte type + 1-byte value.
  if (n_kv > remaining() / 13) {
    return DataLoss("metadata count" + at(nkv_pos) + ": " + std::to_string(n_kv) +
                    " key/value pairs cannot fit in the " + std::to_string(remaining()) +
                    " bytes that remain");
  }
  // Smallest tensor info: 8-byte name length + 4 n_dims + 8 dim + 4 type + 8 offset.
  if (n_tensors > remaining() / 32) {
    return DataLoss("tensor count" + at(nt_pos) + ": " + std::to_string(n_tensors) +
                    " tensor infos cannot fit in the " + std::to_string(remaining()) +
                    " bytes that remain");
  }
  return OkStatus();
}

Status Parser::read_metadata(GgufFile& f, uint64_t n_kv) {
  f.kv_.reserve(static_cast<size_t>(std::min(n_kv, kReserveCap)));  // n_kv checked too
  kv_offsets_.reserve(static_cast<size_t>(std::min(n_kv, kReserveCap)));
  std::unordered_set<std::string> seen;
  for (uint64_t i = 0; i < n_kv; ++i) {
    const uint64_t key_pos = pos_;
    HEARTH_ASSIGN_OR_RETURN(std::string key, read_string("metadata key #" + std::to_string(i)));
    const std::string what = "metadata key '" + key + "'";
    if (!seen.insert(key).second) {
      return DataLoss(what + at(key_pos) + ": duplicate key");
    }
    HEARTH_ASSIGN_OR_RETURN(uint32_t type_id, read<uint32_t>(what + " value type"));
    Value v;
    HEARTH_RETURN_IF_ERROR(read_value(type_id, 0, what, v));
    f.kv_.emplace_back(std::move(key), std::move(v));
    kv_offsets_.push_back(key_pos);
  }
  return OkStatus();
}

Status Parser::resolve_alignment(GgufFile& f) {
  f.alignment_ = kDefaultAlignment;
  for (size_t i = 0; i < f.kv_.size(); ++i) {
    if (f.kv_[i].first != kAlignmentKey) continue;
    const std::string what = std::string(kAlignmentKey) + at(kv_offsets_[i]);
    auto a = f.kv_[i].second.as_u64();
    if (!a.ok()) return DataLoss(what + ": " + a.status().message());
    if (!is_power_of_two(*a)) {
      return DataLoss(what + ": " + std::to_string(*a) + " is not a non-zero power of two");
    }
    if (*a > (uint64_t{1} << 30)) {
      return DataLoss(what + ": " + std::to_string(*a) + " is larger than 1 GiB");
    }
    f.alignment_ = *a;
  }
  return OkStatus();
}

Status Parser::read_tensor_info(GgufFile& f, uint64_t index,
                                std::unordered_set<std::string>& names) {
  const uint64_t info_pos = pos_;
  HEARTH_ASSIGN_OR_RETURN(std::string name,
                          read_string("tensor info #" + std::to_string(index) + " name"));
  const std::string what = "tensor '" + name + "' (info at byte " + std::to_string(info_pos) + ")";
  if (!names.insert(name).second) return DataLoss(what + ": duplicate tensor name");
  HEARTH_ASSIGN_OR_RETURN(uint32_t n_dims, read<uint32_t>(what + " n_dims"));
  if (n_dims == 0 || n_dims > kMaxDims) {
    return DataLoss(what + ": n_dims " + std::to_string(n_dims) + " must be 1.." +
                    std::to_string(kMaxDims));
  }
  TensorInfo t;
  t.name = std::move(name);
  t.dims.resize(n_dims);
  uint64_t n_elements = 1;
  constexpr uint64_t kMaxElements = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  for (uint32_t d = 0; d < n_dims; ++d) {
    const std::string dim_what = what + " ne[" + std::to_string(d) + "]";
    HEARTH_ASSIGN_OR_RETURN(uint64_t ne, read<uint64_t>(dim_what));
    if (ne > kMaxElements) {
      return DataLoss(dim_what + ": " + std::to_string(ne) + " exceeds INT64_MAX");
    }
    if (ne != 0 && n_elements > kMaxElements / ne) {
      return DataLoss(dim_what + ": element count overflows (product of dims exceeds INT64_MAX)");
    }
    n_elements *= ne;
    t.dims[d] = ne;
  }
  const uint64_t type_pos = pos_;
  HEARTH_ASSIGN_OR_RETURN(uint32_t type_id, read<uint32_t>(what + " type"));
  const TypeTraits* tr = type_traits(type_id);
  if (tr == nullptr) {
    return Unsupported(what + ": unknown ggml type id " + std::to_string(type_id) + at(type_pos));
  }
  t.type = static_cast<TensorType>(type_id);
  if (t.dims[0] % tr->block_size != 0) {
    return DataLoss(what + ": ne[0] = " + std::to_string(t.dims[0]) + " is not a multiple of the " +
                    tr->name + " block size " + std::to_string(tr->block_size));
  }
  // Bytes = blocks per row * block bytes * rows, each step checked for overflow.
  const uint64_t row = t.dims[0] / tr->block_size * tr->type_size;  // <= 4 * INT64_MAX / 1
  uint64_t rows = 1;
  for (uint32_t d = 1; d < n_dims; ++d) rows *= t.dims[d];  // <= n_elements, no overflow
  if (t.dims[0] != 0 && row / tr->type_size != t.dims[0] / tr->block_size) {
    return DataLoss(what + ": byte size overflows");
  }
  if (rows != 0 && row > std::numeric_limits<uint64_t>::max() / rows) {
    return DataLoss(what + ": byte size overflows");
  }
  t.n_elements = n_elements;
  t.n_bytes = row * rows;
  HEARTH_ASSIGN_OR_RETURN(t.offset, read<uint64_t>(what + " offset"));
  f.tensors_.push_back(std::move(t));
  info_offsets_.push_back(info_pos);
  return OkStatus();
}

Status Parser::place_tensors(GgufFile& f) {
  const uint64_t a = f.alignment_;
  if (pos_ > std::numeric_limits<uint64_t>::max() - a) {
    return DataLoss("data section start" + at(pos_) + " overflows");
  }
  f.data_offset_ = (pos_ + a - 1) / a * a;
  const uint64_t data_size = b_.size() > f.data_offset_ ? b_.size() - f.data_offset_ : 0;
  for (size_t i = 0; i < f.tensors_.size(); ++i) {
    TensorInfo& t = f.tensors_[i];
    const std::string what =
        "tensor '" + t.name + "' (info at byte " + std::to_string(info_offsets_[i]) + ")";
    if (t.offset % a != 0) {
      return DataLoss(what + ": offset " + std::to_string(t.offset) + " not aligned to " +
                      std::to_string(a));
    }
    if (t.offset > data_size || t.n_bytes > data_size - t.offset) {
      return DataLoss(what + ": data [" + std::to_string(t.offset) + ", +" +
                      std::to_string(t.n_bytes) + ") runs past the end of the " +
                      std::to_string(data_size) + "-byte data section at byte " +
                      std::to_string(f.data_offset_));
    }
    t.data = t.n_bytes > 0 ? b_.data() + f.data_offset_ + t.offset : nullptr;
  }
  // Overlap check over the non-empty tensors, in offset order.
  std::vector<size_t> order;
  order.reserve(f.tensors_.size());
  for (size_t i = 0; i < f.tensors_.size(); ++i) {
    if (f.tensors_[i].n_bytes > 0) order.push_back(i);
  }
  std::sort(order.begin(), order.end(),
            [&](size_t x, size_t y) { return f.tensors_[x].offset < f.tensors_[y].offset; });
  for (size_t k = 1; k < order.size(); ++k) {
    const TensorInfo& prev = f.tensors_[order[k - 1]];
    const TensorInfo& cur = f.tensors_[order[k]];
    if (prev.offset + prev.n_bytes > cur.offset) {
      return DataLoss("tensor '" + cur.name + "' (info at byte " +
                      std::to_string(info_offsets_[order[k]]) + "): data at offset " +
                      std::to_string(cur.offset) + " overlaps tensor '" + prev.name + "' [" +
                      std::to_string(prev.offset) + ", +" + std::to_string(prev.n_bytes) + ")");
    }
  }
  return OkStatus();
}

Status Parser::run(GgufFile& f) {
  uint64_t n_tensors = 0;
  uint64_t n_kv = 0;
  HEARTH_RETURN_IF_ERROR(read_header(f, n_tensors, n_kv));
  HEARTH_RETURN_IF_ERROR(read_metadata(f, n_kv));
  HEARTH_RETURN_IF_ERROR(resolve_alignment(f));
  // Re-check the tensor count against what is left after the metadata.
  if (n_tensors > remaining() / 32) {
    return DataLoss("tensor count (at byte 8): " + std::to_string(n_tensors) +
                    " tensor infos cannot fit in the " + std::to_string(remaining()) +
                    " bytes left after the metadata" + at(pos_));
  }
  f.tensors_.reserve(static_cast<size_t>(std::min(n_tensors, kReserveCap)));
  info_offsets_.reserve(static_cast<size_t>(std::min(n_tensors, kReserveCap)));
  std::unordered_set<std::string> names;
  for (uint64_t i = 0; i < n_tensors; ++i) {
    HEARTH_RETURN_IF_ERROR(read_tensor_info(f, i, names));
  }
  return place_tensors(f);
}

// ---- GgufFile ----

GgufFile::GgufFile() = default;
GgufFile::~GgufFile() = default;
GgufFile::GgufFile(GgufFile&&) noexcept = default;
GgufFile& GgufFile::operator=(GgufFile&&) noexcept = default;

Result<GgufFile> GgufFile::parse(std::span<const uint8_t> bytes) {
  GgufFile f;
  f.bytes_ = bytes;
  Parser p(bytes);
  HEARTH_RETURN_IF_ERROR(p.run(f));
  return f;
}

Result<GgufFile> GgufFile::open(const std::string& path) {
  auto mapped = MappedFile::open(path);
  if (!mapped.ok()) return mapped.status();
  auto mapping = std::make_shared<MappedFile>(std::move(mapped).value());
  auto parsed = parse(mapping->bytes());
  if (!parsed.ok()) {
    return Status(parsed.status().code(), path + ": " + parsed.status().message());
  }
  GgufFile f = std::move(parsed).value();
  f.mapping_ = std::move(mapping);
  f.path_ = path;
  return f;
}

const Value* GgufFile::find(std::string_view key) const {
  for (const auto& [k, v] : kv_) {
    if (k == key) return &v;
  }
  return nullptr;
}

const TensorInfo* GgufFile::tensor(std::string_view name) const {
  for (const auto& t : tensors_) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::string GgufFile::architecture() const {
  const Value* v = find("general.architecture");
  if (v == nullptr) return "";
  auto s = v->as_string();
  return s.ok() ? std::string(*s) : "";
}

}  // namespace hearth::gguf
