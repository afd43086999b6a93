// Builds GGUF images byte by byte, so tests can produce files the writer refuses to.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace hearth::gguf::testing {

class ByteBuilder {
 public:
  template <typename T>
  ByteBuilder& put(T v) {
    const size_t n = b_.size();
    b_.resize(n + sizeof(T));
    std::memcpy(b_.data() + n, &v, sizeof(T));
    return *this;
  }
  ByteBuilder& u8(uint8_t v) { return put(v); }
  ByteBuilder& u32(uint32_t v) { return put(v); }
  ByteBuilder& u64(uint64_t v) { return put(v); }
  ByteBuilder& str(std::string_view s) {
    u64(s.size());
    b_.insert(b_.end(), s.begin(), s.end());
    return *this;
  }
  // magic, version, tensor count, kv count
  ByteBuilder& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    return u32(0x46554747).u32(version).u64(n_tensors).u64(n_kv);
  }
  ByteBuilder& kv_u32(std::string_view key, uint32_t v) { return str(key).u32(4).u32(v); }
  ByteBuilder& kv_str(std::string_view key, std::string_view v) { return str(key).u32(8).str(v); }
  // name, dims, type id, offset
  ByteBuilder& tensor_info(std::string_view name, std::vector<uint64_t> dims, uint32_t type,
                           uint64_t offset) {
    str(name).u32(static_cast<uint32_t>(dims.size()));
    for (uint64_t d : dims) u64(d);
    return u32(type).u64(offset);
  }
  ByteBuilder& pad_to(size_t alignment) {
    while (b_.size() % alignment != 0) b_.push_back(0);
    return *this;
  }
  ByteBuilder& zeros(size_t n) {
    b_.resize(b_.size() + n, 0);
    return *this;
  }
  size_t size() const { return b_.size(); }
  const std::vector<uint8_t>& bytes() const { return b_; }

 private:
  std::vector<uint8_t> b_;
};

}  // namespace hearth::gguf::testing
