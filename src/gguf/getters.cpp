// GgufFile's typed metadata getters. Absent keys are NotFound; present keys of the
// wrong type are InvalidArgument naming the key.
#include <limits>

#include "hearth/gguf/gguf.h"

namespace hearth::gguf {
namespace {

Status missing(std::string_view key) {
  return NotFound("metadata key '" + std::string(key) + "' not found");
}

Status wrong(std::string_view key, const Status& st) {
  return InvalidArgument("metadata key '" + std::string(key) + "': " + st.message());
}

// The elements of an array value, or an error naming the key.
Result<const std::vector<Value>*> array_of(const GgufFile& f, std::string_view key) {
  const Value* v = f.find(key);
  if (v == nullptr) return missing(key);
  const std::vector<Value>* elems = v->as_array();
  if (elems == nullptr) {
    return InvalidArgument("metadata key '" + std::string(key) + "': expected an array, found " +
                           value_type_name(v->type));
  }
  return elems;
}

}  // namespace

Result<uint64_t> GgufFile::get_u64(std::string_view key) const {
  const Value* v = find(key);
  if (v == nullptr) return missing(key);
  auto r = v->as_u64();
  if (!r.ok()) return wrong(key, r.status());
  return *r;
}

Result<uint32_t> GgufFile::get_u32(std::string_view key) const {
  HEARTH_ASSIGN_OR_RETURN(uint64_t v, get_u64(key));
  if (v > std::numeric_limits<uint32_t>::max()) {
    return InvalidArgument("metadata key '" + std::string(key) + "': " + std::to_string(v) +
                           " does not fit in u32");
  }
  return static_cast<uint32_t>(v);
}

Result<int64_t> GgufFile::get_i64(std::string_view key) const {
  const Value* v = find(key);
  if (v == nullptr) return missing(key);
  auto r = v->as_i64();
  if (!r.ok()) return wrong(key, r.status());
  return *r;
}

Result<float> GgufFile::get_f32(std::string_view key) const {
  const Value* v = find(key);
  if (v == nullptr) return missing(key);
  auto r = v->as_f64();
  if (!r.ok()) return wrong(key, r.status());
  return static_cast<float>(*r);
}

Result<bool> GgufFile::get_bool(std::string_view key) const {
  const Value* v = find(key);
  if (v == nullptr) return missing(key);
  auto r = v->as_bool();
  if (!r.ok()) return wrong(key, r.status());
  return *r;
}

Result<std::string> GgufFile::get_string(std::string_view key) const {
  const Value* v = find(key);
  if (v == nullptr) return missing(key);
  auto r = v->as_string();
  if (!r.ok()) return wrong(key, r.status());
  return std::string(*r);
}

Result<std::vector<std::string>> GgufFile::get_string_array(std::string_view key) const {
  HEARTH_ASSIGN_OR_RETURN(const std::vector<Value>* elems, array_of(*this, key));
  std::vector<std::string> out;
  out.reserve(elems->size());
  for (size_t i = 0; i < elems->size(); ++i) {
    auto s = (*elems)[i].as_string();
    if (!s.ok()) {
      return InvalidArgument("metadata key '" + std::string(key) + "' element " +
                             std::to_string(i) + ": " + s.status().message());
    }
    out.emplace_back(*s);
  }
  return out;
}

Result<std::vector<float>> GgufFile::get_f32_array(std::string_view key) const {
  HEARTH_ASSIGN_OR_RETURN(const std::vector<Value>* elems, array_of(*this, key));
  std::vector<float> out;
  out.reserve(elems->size());
  for (size_t i = 0; i < elems->size(); ++i) {
    auto d = (*elems)[i].as_f64();
    if (!d.ok()) {
      return InvalidArgument("metadata key '" + std::string(key) + "' element " +
                             std::to_string(i) + ": " + d.status().message());
    }
    out.push_back(static_cast<float>(*d));
  }
  return out;
}

Result<std::vector<int32_t>> GgufFile::get_i32_array(std::string_view key) const {
  HEARTH_ASSIGN_OR_RETURN(const std::vector<Value>* elems, array_of(*this, key));
  std::vector<int32_t> out;
  out.reserve(elems->size());
  for (size_t i = 0; i < elems->size(); ++i) {
    auto v = (*elems)[i].as_i64();
    if (!v.ok() || *v < std::numeric_limits<int32_t>::min() ||
        *v > std::numeric_limits<int32_t>::max()) {
      return InvalidArgument(
          "metadata key '" + std::string(key) + "' element " + std::to_string(i) + ": " +
          (v.ok() ? std::to_string(*v) + " does not fit in i32" : v.status().message()));
    }
    out.push_back(static_cast<int32_t>(*v));
  }
  return out;
}

Result<uint64_t> GgufFile::get_u64_or(std::string_view key, uint64_t fallback) const {
  if (!has(key)) return fallback;
  return get_u64(key);
}

Result<float> GgufFile::get_f32_or(std::string_view key, float fallback) const {
  if (!has(key)) return fallback;
  return get_f32(key);
}

Result<bool> GgufFile::get_bool_or(std::string_view key, bool fallback) const {
  if (!has(key)) return fallback;
  return get_bool(key);
}

}  // namespace hearth::gguf
