// Compression bombs for the body-limit tests (issue #19): a chat request whose user
// message is `prompt_bytes` of 'a', encoded as the server accepts it (Content-Encoding
// gzip, deflate in its zlib wrapping, or br). 256 MiB of prompt compresses to a few
// hundred KB with zlib (about 1000:1, deflate's ceiling) and to far less with brotli.
#pragma once

#include <brotli/encode.h>
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <string>

namespace hearth::server::testing {

enum class Coding { kGzip, kDeflate, kBrotli };

inline const char* coding_name(Coding c) {
  switch (c) {
    case Coding::kGzip:
      return "gzip";
    case Coding::kDeflate:
      return "deflate";
    case Coding::kBrotli:
      return "br";
  }
  return "?";
}

namespace detail {

// Calls feed(data, size, last) with the request's JSON: the head, `prompt_bytes` of 'a'
// in 1 MiB pieces (never held whole), the tail.
template <typename Feed>
bool for_each_piece(const std::string& model, size_t prompt_bytes, Feed feed) {
  const std::string head = std::string(R"({"model":")")
                               .append(model)
                               .append(R"(","messages":[{"role":"user","content":")");
  const std::string tail = R"("}],"max_tokens":2})";
  const std::string run(1 << 20, 'a');
  if (!feed(head.data(), head.size(), false)) return false;
  for (size_t left = prompt_bytes; left > 0;) {
    const size_t n = std::min(left, run.size());
    if (!feed(run.data(), n, false)) return false;
    left -= n;
  }
  return feed(tail.data(), tail.size(), true);
}

}  // namespace detail

// The request body, compressed; empty if the encoder failed.
inline std::string compressed_chat(Coding coding, size_t prompt_bytes,
                                   const std::string& model = "fake") {
  std::string out;
  char buf[1 << 16];
  if (coding == Coding::kBrotli) {
    BrotliEncoderState* s = BrotliEncoderCreateInstance(nullptr, nullptr, nullptr);
    if (s == nullptr) return {};
    BrotliEncoderSetParameter(s, BROTLI_PARAM_QUALITY, 5);
    BrotliEncoderSetParameter(s, BROTLI_PARAM_LGWIN, 24);
    const bool ok =
        detail::for_each_piece(model, prompt_bytes, [&](const char* data, size_t n, bool last) {
          size_t avail_in = n;
          auto next_in = reinterpret_cast<const uint8_t*>(data);
          const auto op = last ? BROTLI_OPERATION_FINISH : BROTLI_OPERATION_PROCESS;
          while (avail_in > 0 || BrotliEncoderHasMoreOutput(s) ||
                 (last && !BrotliEncoderIsFinished(s))) {
            size_t avail_out = sizeof(buf);
            auto next_out = reinterpret_cast<uint8_t*>(buf);
            if (!BrotliEncoderCompressStream(s, op, &avail_in, &next_in, &avail_out, &next_out,
                                             nullptr)) {
              return false;
            }
            out.append(buf, sizeof(buf) - avail_out);
          }
          return true;
        });
    BrotliEncoderDestroyInstance(s);
    return ok ? out : std::string();
  }
  z_stream z{};
  // windowBits 15 + 16: a gzip wrapper; 15 alone: zlib's (what HTTP calls "deflate").
  const int window_bits = coding == Coding::kGzip ? 31 : 15;
  // Z_RLE: distance-1 matches only, which is all a run of one byte needs, and fast.
  if (deflateInit2(&z, 9, Z_DEFLATED, window_bits, 9, Z_RLE) != Z_OK) return {};
  const bool ok =
      detail::for_each_piece(model, prompt_bytes, [&](const char* data, size_t n, bool last) {
        z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data));
        z.avail_in = static_cast<uInt>(n);
        int rc = Z_OK;
        do {
          z.next_out = reinterpret_cast<Bytef*>(buf);
          z.avail_out = sizeof(buf);
          rc = deflate(&z, last ? Z_FINISH : Z_NO_FLUSH);
          if (rc == Z_STREAM_ERROR) return false;
          out.append(buf, sizeof(buf) - z.avail_out);
        } while (z.avail_out == 0 || (last && rc != Z_STREAM_END));
        return true;
      });
  deflateEnd(&z);
  return ok ? out : std::string();
}

}  // namespace hearth::server::testing
