// gguf::Value: constructors, typed reads and equality.
#include <cstring>
#include <limits>

#include "hearth/gguf/gguf.h"

namespace hearth::gguf {

Value Value::u32(uint32_t v) {
  Value out;
  out.type = ValueType::kUint32;
  out.data = static_cast<uint64_t>(v);
  return out;
}

Value Value::i32(int32_t v) {
  Value out;
  out.type = ValueType::kInt32;
  out.data = static_cast<int64_t>(v);
  return out;
}

Value Value::u64(uint64_t v) {
  Value out;
  out.type = ValueType::kUint64;
  out.data = v;
  return out;
}

Value Value::f32(float v) {
  Value out;
  out.type = ValueType::kFloat32;
  out.data = static_cast<double>(v);
  return out;
}

Value Value::boolean(bool v) {
  Value out;
  out.type = ValueType::kBool;
  out.data = v;
  return out;
}

Value Value::str(std::string v) {
  Value out;
  out.type = ValueType::kString;
  out.data = std::move(v);
  return out;
}

Value Value::array(ValueType elem, std::vector<Value> elems) {
  Value out;
  out.type = ValueType::kArray;
  out.array_type = elem;
  out.data = std::move(elems);
  return out;
}

Value Value::string_array(const std::vector<std::string>& v) {
  std::vector<Value> elems;
  elems.reserve(v.size());
  for (const auto& s : v) elems.push_back(str(s));
  return array(ValueType::kString, std::move(elems));
}

Value Value::f32_array(const std::vector<float>& v) {
  std::vector<Value> elems;
  elems.reserve(v.size());
  for (float f : v) elems.push_back(f32(f));
  return array(ValueType::kFloat32, std::move(elems));
}

Value Value::i32_array(const std::vector<int32_t>& v) {
  std::vector<Value> elems;
  elems.reserve(v.size());
  for (int32_t i : v) elems.push_back(i32(i));
  return array(ValueType::kInt32, std::move(elems));
}

bool Value::is_integer() const {
  return std::holds_alternative<uint64_t>(data) || std::holds_alternative<int64_t>(data);
}

bool Value::is_float() const {
  return std::holds_alternative<double>(data);
}

static std::string type_mismatch(const char* wanted, ValueType actual) {
  return std::string("expected ") + wanted + ", found " + value_type_name(actual);
}

Result<uint64_t> Value::as_u64() const {
  if (const auto* u = std::get_if<uint64_t>(&data)) return *u;
  if (const auto* i = std::get_if<int64_t>(&data)) {
    if (*i < 0)
      return InvalidArgument("expected a non-negative integer, found " + std::to_string(*i));
    return static_cast<uint64_t>(*i);
  }
  return InvalidArgument(type_mismatch("an integer", type));
}

Result<int64_t> Value::as_i64() const {
  if (const auto* i = std::get_if<int64_t>(&data)) return *i;
  if (const auto* u = std::get_if<uint64_t>(&data)) {
    if (*u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return InvalidArgument("integer " + std::to_string(*u) + " does not fit in i64");
    }
    return static_cast<int64_t>(*u);
  }
  return InvalidArgument(type_mismatch("an integer", type));
}

Result<double> Value::as_f64() const {
  if (const auto* d = std::get_if<double>(&data)) return *d;
  if (const auto* u = std::get_if<uint64_t>(&data)) return static_cast<double>(*u);
  if (const auto* i = std::get_if<int64_t>(&data)) return static_cast<double>(*i);
  return InvalidArgument(type_mismatch("a number", type));
}

Result<bool> Value::as_bool() const {
  if (const auto* b = std::get_if<bool>(&data)) return *b;
  return InvalidArgument(type_mismatch("bool", type));
}

Result<std::string_view> Value::as_string() const {
  if (const auto* s = std::get_if<std::string>(&data)) return std::string_view(*s);
  return InvalidArgument(type_mismatch("string", type));
}

const std::vector<Value>* Value::as_array() const {
  return std::get_if<std::vector<Value>>(&data);
}

bool Value::operator==(const Value& other) const {
  if (type != other.type) return false;
  if (type == ValueType::kArray && array_type != other.array_type) return false;
  if (data.index() != other.data.index()) return false;
  // Floats compare by bit pattern so that NaNs round-trip as "identical".
  if (const auto* d = std::get_if<double>(&data)) {
    const double e = std::get<double>(other.data);
    return std::memcmp(d, &e, sizeof(double)) == 0;
  }
  return data == other.data;
}

}  // namespace hearth::gguf
