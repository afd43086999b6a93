// Tokenizers for GGUF models: SentencePiece-style BPE ("llama" vocabularies) and
// byte-level BPE ("gpt2" vocabularies, with the per-model pre-tokenizers that
// tokenizer.ggml.pre names). Both follow llama.cpp's algorithms so that token ids
// match llama.cpp's for the same vocabulary and text (see docs/tokenizer.md).
//
// A Tokenizer is immutable after create(); all its methods are const and safe to
// call from several threads at once. Copies are cheap (shared immutable state); a
// moved-from Tokenizer may only be assigned to or destroyed.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hearth/status.h"
#include "hearth/text_range.h"

namespace hearth {

namespace gguf {
class GgufFile;
}

// Token types as stored in tokenizer.ggml.token_type (llama.cpp's numbering).
enum class TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

// Plain vocabulary data, as read from tokenizer.ggml.* or built by hand in tests.
struct Vocab {
  // tokenizer.ggml.model: "llama" (SentencePiece BPE), "gpt2" (byte-level BPE) or
  // "bert" (WordPiece). Anything else ("t5", ...) is rejected by Tokenizer::create.
  std::string model;
  // tokenizer.ggml.pre: the byte-level BPE pre-tokenizer ("default" when absent).
  std::string pre = "default";
  std::vector<std::string> tokens;     // token text, indexed by id
  std::vector<float> scores;           // empty, or one per token (SPM merge priority)
  std::vector<TokenType> token_types;  // empty (all kNormal), or one per token
  // BPE merges "A B" in priority order (first = highest). A "gpt2" vocabulary with
  // no merges uses tiktoken's convention instead: a pair's priority is the id of the
  // token formed by concatenating it (lower id merges first).
  std::vector<std::string> merges;
  int32_t bos_id = -1;  // -1: none
  int32_t eos_id = -1;
  int32_t unk_id = -1;
  int32_t pad_id = -1;
  int32_t eot_id = -1;
  int32_t sep_id = -1;   // bert: [SEP], appended after the text when add_sep
  bool add_bos = false;  // encode(add_special=true) prepends bos_id
  bool add_eos = false;  // encode(add_special=true) appends eos_id
  bool add_sep = false;  // encode(add_special=true) appends sep_id (bert: [CLS] text [SEP])
  // SPM only: prepend "▁" to text that starts the input or follows a special token.
  bool add_space_prefix = true;
};

// Reads tokenizer.ggml.{model,pre,tokens,scores,token_type,merges,bos_token_id,
// eos_token_id,unknown_token_id,padding_token_id,eot_token_id,seperator_token_id,
// cls_token_id,add_bos_token,add_eos_token,add_sep_token,add_space_prefix}. Absent
// optional keys get llama.cpp's defaults (SPM: bos 1, eos 2, unk 0, add_bos true,
// add_space_prefix true; BPE: no specials, add_bos true only for the llama3
// pre-tokenizer, add_space_prefix false; bert: bos = cls_token_id or 101, unk 100,
// sep 102, add_bos and add_sep true). A special
// id outside the vocabulary is dropped (-1), as llama.cpp does (logged as a warning
// unless it is -1 or 0xFFFFFFFF, the usual spellings of "none").
// Errors name the key that was missing or malformed.
Result<Vocab> vocab_from_gguf(const gguf::GgufFile& file);

class Tokenizer {
 public:
  // Validates the vocabulary (sizes, special ids in range, supported model and
  // pre-tokenizer) and builds the lookup tables.
  static Result<Tokenizer> create(Vocab vocab);

  // Text -> token ids.
  //   add_special:   apply the vocabulary's add_bos / add_eos flags.
  //   parse_special: recognise the text of control tokens (e.g. "<s>", "<|im_start|>")
  //                  in `text` and emit their ids. User-defined tokens are always
  //                  recognised (as llama.cpp does).
  // Invalid UTF-8 is tokenized, never rejected: SPM falls back to byte tokens, BPE
  // replaces each invalid byte with U+FFFD (as llama.cpp does).
  Result<std::vector<int32_t>> encode(std::string_view text, bool add_special,
                                      bool parse_special) const;

  // encode, with control (and unknown) token text recognised only where it lies wholly
  // inside one of `special_ranges` (byte ranges of `text`; touching or overlapping
  // ranges are merged first); elsewhere it is ordinary text. Only the places where the
  // text is cut change, so a text whose control-token text all lies inside the ranges
  // gives exactly encode(text, add_special, /*parse_special=*/true). A range past the
  // end of `text` or with begin > end -> InvalidArgument.
  Result<std::vector<int32_t>> encode_with_special_ranges(
      std::string_view text, bool add_special, std::span<const TextRange> special_ranges) const;

  // The raw bytes a token stands for: SPM "▁" -> ' ', "<0xXX>" byte tokens -> that
  // byte, byte-level BPE characters -> their bytes, user-defined tokens -> their text.
  // Control and unknown tokens give their text when render_special, else ""; unused
  // tokens give "". An out-of-range id gives "" (use decode() to get an error instead).
  std::string token_to_piece(int32_t id, bool render_special = true) const;

  // Concatenated pieces. As llama.cpp does, one leading space is dropped from the
  // first token's piece when the vocabulary adds a space prefix (SPM), so that
  // decode(encode(s)) == s for plain text. Out-of-range ids -> OutOfRange error.
  Result<std::string> decode(std::span<const int32_t> ids, bool render_special = true) const;

  int32_t n_vocab() const;
  int32_t bos_id() const;  // -1 when the vocabulary has none
  int32_t eos_id() const;
  int32_t eot_id() const;
  int32_t unk_id() const;
  int32_t pad_id() const;
  int32_t sep_id() const;
  bool add_bos() const;
  bool add_eos() const;
  const std::string& model() const;  // "llama" or "gpt2"
  const std::string& pre() const;

  bool is_valid(int32_t id) const { return id >= 0 && id < n_vocab(); }
  // End of generation: eos, eot, or a control/user-defined token whose text is a
  // well-known end-of-turn marker ("<|eot_id|>", "<|im_end|>", "<|end|>",
  // "<|endoftext|>", "<end_of_turn>", ...). False for out-of-range ids.
  bool is_eog(int32_t id) const;
  bool is_control(int32_t id) const;       // TokenType::kControl; false when out of range
  TokenType token_type(int32_t id) const;  // kUndefined when out of range
  // The stored token text (e.g. "▁Hello", "Ġworld", "<0x0A>"); "" when out of range.
  std::string_view token_text(int32_t id) const;
  // Id of the token whose stored text is exactly `text`.
  std::optional<int32_t> find_token(std::string_view text) const;

  const Vocab& vocab() const;

  Tokenizer(const Tokenizer&) = default;
  Tokenizer& operator=(const Tokenizer&) = default;
  Tokenizer(Tokenizer&&) noexcept = default;
  Tokenizer& operator=(Tokenizer&&) noexcept = default;
  ~Tokenizer();

  struct Impl;

 private:
  explicit Tokenizer(std::shared_ptr<const Impl> impl);
  std::shared_ptr<const Impl> impl_;
};

// Streaming detokenization for generated tokens. push() returns only complete UTF-8
// characters: a trailing incomplete multi-byte sequence is held back until a later
// token completes it. Bytes that can no longer become valid UTF-8 (a stray
// continuation byte, a lead byte followed by a non-continuation byte, an invalid lead
// byte 0xC0/0xC1/0xF5..0xFF) are emitted as they are, as soon as that is certain, so
// concatenating every push() and the final flush() gives exactly the concatenated
// token pieces. No leading space is stripped (pieces are appended verbatim).
class StreamDecoder {
 public:
  // The tokenizer must outlive the decoder.
  explicit StreamDecoder(const Tokenizer& tokenizer, bool render_special = true);

  // Adds one token; returns the text that became complete. Out-of-range ids ->
  // OutOfRange error, leaving the decoder's state unchanged.
  Result<std::string> push(int32_t id);
  // Returns whatever is held back (an incomplete sequence, as raw bytes) and resets.
  std::string flush();
  // Drops held-back bytes.
  void reset() { pending_.clear(); }
  // Number of bytes currently held back.
  size_t pending_bytes() const { return pending_.size(); }

 private:
  const Tokenizer* tokenizer_;
  bool render_special_;
  std::string pending_;
};

}  // namespace hearth
