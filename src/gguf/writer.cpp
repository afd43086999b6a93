// GGUF v3 writer: metadata in insertion order, tensor data aligned to
// general.alignment. Everything is validated before a byte is produced.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>

#include "gguf/format.h"
#include "hearth/gguf/gguf.h"

namespace hearth::gguf {
namespace {

template <typename T>
void put(std::vector<uint8_t>& out, T v) {
  const size_t n = out.size();
  out.resize(n + sizeof(T));
  std::memcpy(out.data() + n, &v, sizeof(T));
}

void put_string(std::vector<uint8_t>& out, std::string_view s) {
  put<uint64_t>(out, s.size());
  out.insert(out.end(), s.begin(), s.end());
}

Status bad(const std::string& what, const std::string& why) {
  return InvalidArgument(what + ": " + why);
}

// Integer payload as uint64 bits after checking it fits the declared type.
Status check_int_range(const Value& v, ValueType t, const std::string& what, uint64_t* bits) {
  const bool is_signed = t == ValueType::kInt8 || t == ValueType::kInt16 ||
                         t == ValueType::kInt32 || t == ValueType::kInt64;
  if (is_signed) {
    auto r = v.as_i64();
    if (!r.ok()) return bad(what, r.status().message());
    int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
    if (t == ValueType::kInt8) lo = INT8_MIN, hi = INT8_MAX;
    if (t == ValueType::kInt16) lo = INT16_MIN, hi = INT16_MAX;
    if (t == ValueType::kInt32) lo = INT32_MIN, hi = INT32_MAX;
    if (*r < lo || *r > hi) {
      return bad(what, std::to_string(*r) + " does not fit in " + value_type_name(t));
    }
    *bits = static_cast<uint64_t>(*r);
    return OkStatus();
  }
  auto r = v.as_u64();
  if (!r.ok()) return bad(what, r.status().message());
  uint64_t hi = std::numeric_limits<uint64_t>::max();
  if (t == ValueType::kUint8) hi = UINT8_MAX;
  if (t == ValueType::kUint16) hi = UINT16_MAX;
  if (t == ValueType::kUint32) hi = UINT32_MAX;
  if (*r > hi) return bad(what, std::to_string(*r) + " does not fit in " + value_type_name(t));
  *bits = *r;
  return OkStatus();
}

// Encodes the payload of v (not its type id).
Status encode_value(const Value& v, int depth, const std::string& what, std::vector<uint8_t>& out) {
  const uint32_t id = static_cast<uint32_t>(v.type);
  if (id > 12) return bad(what, "unknown value type id " + std::to_string(id));
  switch (v.type) {
    case ValueType::kUint8:
    case ValueType::kInt8:
    case ValueType::kUint16:
    case ValueType::kInt16:
    case ValueType::kUint32:
    case ValueType::kInt32:
    case ValueType::kUint64:
    case ValueType::kInt64: {
      uint64_t bits = 0;
      HEARTH_RETURN_IF_ERROR(check_int_range(v, v.type, what, &bits));
      const size_t n = scalar_size(id);
      const size_t at = out.size();
      out.resize(at + n);
      std::memcpy(out.data() + at, &bits, n);  // little-endian host: low bytes first
      return OkStatus();
    }
    case ValueType::kFloat32:
    case ValueType::kFloat64: {
      auto d = v.as_f64();
      if (!d.ok()) return bad(what, d.status().message());
      if (v.type == ValueType::kFloat32) {
        put<float>(out, static_cast<float>(*d));
      } else {
        put<double>(out, *d);
      }
      return OkStatus();
    }
    case ValueType::kBool: {
      auto b = v.as_bool();
      if (!b.ok()) return bad(what, b.status().message());
      put<uint8_t>(out, *b ? 1 : 0);
      return OkStatus();
    }
    case ValueType::kString: {
      auto s = v.as_string();
      if (!s.ok()) return bad(what, s.status().message());
      put_string(out, *s);
      return OkStatus();
    }
    case ValueType::kArray: {
      const std::vector<Value>* elems = v.as_array();
      if (elems == nullptr) return bad(what, "array value holds no elements vector");
      if (depth >= kMaxArrayDepth) {
        return bad(what, "arrays nested deeper than " + std::to_string(kMaxArrayDepth));
      }
      const uint32_t elem_id = static_cast<uint32_t>(v.array_type);
      if (elem_id > 12)
        return bad(what, "unknown array element type id " + std::to_string(elem_id));
      put<uint32_t>(out, elem_id);
      put<uint64_t>(out, elems->size());
      for (size_t i = 0; i < elems->size(); ++i) {
        const Value& e = (*elems)[i];
        if (e.type != v.array_type) {
          return bad(what, "array element " + std::to_string(i) + " is " + value_type_name(e.type) +
                               " in an array of " + value_type_name(v.array_type));
        }
        HEARTH_RETURN_IF_ERROR(encode_value(e, depth + 1, what, out));
      }
      return OkStatus();
    }
  }
  return bad(what, "unknown value type");
}

uint64_t align_up(uint64_t v, uint64_t a) {
  return (v + a - 1) / a * a;
}

// Owns a file descriptor; writes all bytes or fails with the OS reason.
class OutFile {
 public:
  ~OutFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  Status open(const std::string& path) {
    path_ = path;
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) return IoError("cannot create '" + path + "': " + std::strerror(errno));
    return OkStatus();
  }
  Status write(const uint8_t* p, size_t n) {
    while (n > 0) {
      const ssize_t w = ::write(fd_, p, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        return IoError("write to '" + path_ + "' failed: " + std::strerror(errno));
      }
      p += w;
      n -= static_cast<size_t>(w);
    }
    return OkStatus();
  }
  Status zeros(size_t n) {
    static const uint8_t kZero[256] = {};
    while (n > 0) {
      const size_t k = n < sizeof(kZero) ? n : sizeof(kZero);
      HEARTH_RETURN_IF_ERROR(write(kZero, k));
      n -= k;
    }
    return OkStatus();
  }
  Status finish() {
    if (::fsync(fd_) != 0) return IoError("fsync '" + path_ + "': " + std::strerror(errno));
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) return IoError("close '" + path_ + "': " + std::strerror(errno));
    return OkStatus();
  }

 private:
  int fd_ = -1;
  std::string path_;
};

}  // namespace

void GgufWriter::set(std::string key, Value value) {
  for (auto& kv : kv_) {
    if (kv.first == key) {
      kv.second = std::move(value);
      return;
    }
  }
  kv_.emplace_back(std::move(key), std::move(value));
}

Status GgufWriter::check_tensor(const std::string& name, const std::vector<uint64_t>& dims,
                                TensorType type, uint64_t* n_bytes) const {
  const std::string what = "tensor '" + name + "'";
  for (const auto& t : tensors_) {
    if (t.name == name) return bad(what, "duplicate tensor name");
  }
  const TypeTraits* tr = type_traits(type);
  if (tr == nullptr) {
    return bad(what, "unknown ggml type id " + std::to_string(static_cast<uint32_t>(type)));
  }
  if (dims.empty() || dims.size() > kMaxDims) {
    return bad(what, std::to_string(dims.size()) + " dims, must be 1.." + std::to_string(kMaxDims));
  }
  if (dims[0] % tr->block_size != 0) {
    return bad(what, "ne[0] = " + std::to_string(dims[0]) + " is not a multiple of the " +
                         tr->name + " block size " + std::to_string(tr->block_size));
  }
  constexpr uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  uint64_t bytes = dims[0] / tr->block_size * tr->type_size;
  uint64_t elements = dims[0];
  if (dims[0] > kMax || (dims[0] != 0 && bytes / tr->type_size != dims[0] / tr->block_size)) {
    return bad(what, "size overflows");
  }
  for (size_t d = 1; d < dims.size(); ++d) {
    if (dims[d] > kMax || (dims[d] != 0 && (elements > kMax / dims[d] || bytes > kMax / dims[d]))) {
      return bad(what, "size overflows");
    }
    elements *= dims[d];
    bytes *= dims[d];
  }
  *n_bytes = bytes;
  return OkStatus();
}

Status GgufWriter::add_tensor(std::string name, std::vector<uint64_t> dims, TensorType type,
                              std::vector<uint8_t> data) {
  uint64_t n_bytes = 0;
  HEARTH_RETURN_IF_ERROR(check_tensor(name, dims, type, &n_bytes));
  if (data.size() != n_bytes) {
    return bad("tensor '" + name + "'", "data holds " + std::to_string(data.size()) +
                                            " bytes, shape and type need " +
                                            std::to_string(n_bytes));
  }
  tensors_.push_back({std::move(name), std::move(dims), type, std::move(data), n_bytes, false});
  return OkStatus();
}

Status GgufWriter::add_tensor_spec(std::string name, std::vector<uint64_t> dims, TensorType type) {
  uint64_t n_bytes = 0;
  HEARTH_RETURN_IF_ERROR(check_tensor(name, dims, type, &n_bytes));
  tensors_.push_back({std::move(name), std::move(dims), type, {}, n_bytes, true});
  return OkStatus();
}

Result<std::vector<uint8_t>> GgufWriter::serialize_header(std::vector<uint64_t>* offsets,
                                                          uint64_t* alignment) const {
  uint64_t a = kDefaultAlignment;
  for (const auto& [key, value] : kv_) {
    if (key != kAlignmentKey) continue;
    auto v = value.as_u64();
    if (!v.ok() || *v == 0 || (*v & (*v - 1)) != 0 || *v > (uint64_t{1} << 30)) {
      return bad(kAlignmentKey, "must be a non-zero power of two integer up to 1 GiB");
    }
    a = *v;
  }
  std::vector<uint8_t> out;
  put<uint32_t>(out, kMagic);
  put<uint32_t>(out, kWriteVersion);
  put<uint64_t>(out, tensors_.size());
  put<uint64_t>(out, kv_.size());
  for (const auto& [key, value] : kv_) {
    put_string(out, key);
    put<uint32_t>(out, static_cast<uint32_t>(value.type));
    HEARTH_RETURN_IF_ERROR(encode_value(value, 0, "metadata key '" + key + "'", out));
  }
  offsets->clear();
  uint64_t offset = 0;
  for (const auto& t : tensors_) {
    put_string(out, t.name);
    put<uint32_t>(out, static_cast<uint32_t>(t.dims.size()));
    for (uint64_t d : t.dims) put<uint64_t>(out, d);
    put<uint32_t>(out, static_cast<uint32_t>(t.type));
    put<uint64_t>(out, offset);
    offsets->push_back(offset);
    offset = align_up(offset + t.n_bytes, a);
  }
  if (!tensors_.empty()) out.resize(align_up(out.size(), a), 0);
  *alignment = a;
  return out;
}

Result<std::vector<uint8_t>> GgufWriter::serialize() const {
  std::vector<uint64_t> offsets;
  uint64_t a = 0;
  HEARTH_ASSIGN_OR_RETURN(std::vector<uint8_t> out, serialize_header(&offsets, &a));
  const size_t data_start = out.size();
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const PendingTensor& t = tensors_[i];
    if (t.deferred) {
      return bad("tensor '" + t.name + "'", "declared without data; use write_file_streaming()");
    }
    out.resize(data_start + offsets[i], 0);
    out.insert(out.end(), t.data.begin(), t.data.end());
  }
  if (!tensors_.empty()) out.resize(data_start + align_up(out.size() - data_start, a), 0);
  return out;
}

Status GgufWriter::write_file(const std::string& path) const {
  return write_file_streaming(path, [this](size_t index, std::span<uint8_t>) -> Status {
    return bad("tensor '" + tensors_[index].name + "'",
               "declared without data; use write_file_streaming()");
  });
}

Status GgufWriter::write_file_streaming(const std::string& path, const TensorFiller& fill) const {
  std::vector<uint64_t> offsets;
  uint64_t a = 0;
  HEARTH_ASSIGN_OR_RETURN(std::vector<uint8_t> header, serialize_header(&offsets, &a));
  const std::string tmp = path + ".tmp";
  Status st;
  {
    OutFile out;
    HEARTH_RETURN_IF_ERROR(out.open(tmp));
    st = out.write(header.data(), header.size());
    std::vector<uint8_t> buffer;
    uint64_t written = 0;  // bytes of the data section so far
    for (size_t i = 0; st.ok() && i < tensors_.size(); ++i) {
      const PendingTensor& t = tensors_[i];
      st = out.zeros(static_cast<size_t>(offsets[i] - written));
      if (!st.ok()) break;
      if (t.deferred) {
        buffer.assign(static_cast<size_t>(t.n_bytes), 0);
        st = fill(i, std::span<uint8_t>(buffer));
        if (st.ok()) st = out.write(buffer.data(), buffer.size());
      } else {
        st = out.write(t.data.data(), t.data.size());
      }
      written = offsets[i] + t.n_bytes;
    }
    if (st.ok() && !tensors_.empty())
      st = out.zeros(static_cast<size_t>(align_up(written, a) - written));
    if (st.ok()) st = out.finish();
  }
  if (st.ok() && std::rename(tmp.c_str(), path.c_str()) != 0) {
    st = IoError("rename '" + tmp + "' -> '" + path + "': " + std::strerror(errno));
  }
  if (!st.ok()) std::remove(tmp.c_str());
  return st;
}

}  // namespace hearth::gguf
