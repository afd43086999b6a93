// Tokenizer: validation and table building (create), encode, token pieces, decode.
#include "hearth/engine/tokenizer.h"

#include <algorithm>
#include <array>
#include <cstdio>

#include "engine/tokenizer/tokenizer_impl.h"
#include "engine/tokenizer/unicode.h"

namespace hearth {
namespace {

using tokenizer::ModelKind;

constexpr std::string_view kSpaceMarker = "\xE2\x96\x81";  // "▁" U+2581

// Texts that end a turn in common chat formats; a control or user-defined token
// with one of these texts counts as end-of-generation (llama.cpp does the same).
constexpr std::string_view kEogTexts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>",         "<end_of_turn>",         "<|endoftext|>",
    "<EOT>",      "_<EOT>",     "<|end_of_text|>", "<｜end▁of▁sentence｜>", "<|return|>",
    "<|call|>",   "<|eom_id|>",
};

std::string replace_spaces(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 2);
  for (char c : text) {
    if (c == ' ') {
      out.append(kSpaceMarker);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string unescape_spaces(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    if (text.substr(pos, kSpaceMarker.size()) == kSpaceMarker) {
      out.push_back(' ');
      pos += kSpaceMarker.size();
    } else {
      out.push_back(text[pos++]);
    }
  }
  return out;
}

// "<0xAB>" -> 0xAB, or -1.
int parse_byte_token(std::string_view text) {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return -1;
  int value = 0;
  for (size_t i = 3; i < 5; ++i) {
    const char c = text[i];
    int digit;
    if (c >= '0' && c <= '9') {
      digit = c - '0';
    } else if (c >= 'A' && c <= 'F') {
      digit = c - 'A' + 10;
    } else if (c >= 'a' && c <= 'f') {
      digit = c - 'a' + 10;
    } else {
      return -1;
    }
    value = value * 16 + digit;
  }
  return value;
}

Status check_special_id(const char* what, int32_t id, size_t n) {
  if (id < -1 || (id >= 0 && static_cast<size_t>(id) >= n)) {
    return OutOfRange(std::string("tokenizer: ") + what + " " + std::to_string(id) +
                      " is outside the vocabulary of " + std::to_string(n) + " tokens");
  }
  return OkStatus();
}

}  // namespace

Tokenizer::Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::~Tokenizer() = default;

Result<Tokenizer> Tokenizer::create(Vocab vocab) {
  auto impl = std::make_shared<Impl>();
  if (vocab.model == "llama") {
    impl->kind = ModelKind::kSpm;
  } else if (vocab.model == "gpt2") {
    impl->kind = ModelKind::kBpe;
  } else if (vocab.model == "bert") {
    impl->kind = ModelKind::kWpm;
  } else {
    return Unsupported("tokenizer model '" + vocab.model +
                       "' is not supported (hearth handles 'llama', 'gpt2' and 'bert')");
  }
  const size_t n = vocab.tokens.size();
  if (n == 0) return InvalidArgument("tokenizer: the vocabulary has no tokens");
  if (n > static_cast<size_t>(INT32_MAX)) return InvalidArgument("tokenizer: vocabulary too large");
  if (!vocab.scores.empty() && vocab.scores.size() != n) {
    return InvalidArgument("tokenizer: " + std::to_string(vocab.scores.size()) + " scores for " +
                           std::to_string(n) + " tokens");
  }
  if (!vocab.token_types.empty() && vocab.token_types.size() != n) {
    return InvalidArgument("tokenizer: " + std::to_string(vocab.token_types.size()) +
                           " token types for " + std::to_string(n) + " tokens");
  }
  HEARTH_RETURN_IF_ERROR(check_special_id("bos_id", vocab.bos_id, n));
  HEARTH_RETURN_IF_ERROR(check_special_id("eos_id", vocab.eos_id, n));
  HEARTH_RETURN_IF_ERROR(check_special_id("unk_id", vocab.unk_id, n));
  HEARTH_RETURN_IF_ERROR(check_special_id("pad_id", vocab.pad_id, n));
  HEARTH_RETURN_IF_ERROR(check_special_id("eot_id", vocab.eot_id, n));
  HEARTH_RETURN_IF_ERROR(check_special_id("sep_id", vocab.sep_id, n));
  if (impl->kind == ModelKind::kWpm) {
    // WordPiece writes the unknown token for a word it cannot cut.
    if (vocab.unk_id < 0) {
      return InvalidArgument("tokenizer: a bert (WordPiece) vocabulary needs unknown_token_id");
    }
    for (const std::string& t : vocab.tokens)
      impl->max_token_len = std::max(impl->max_token_len, t.size());
  }
  if (impl->kind == ModelKind::kBpe) {
    HEARTH_ASSIGN_OR_RETURN(impl->pre, tokenizer::pre_tokenizer_from_name(vocab.pre));
    impl->ignore_merges = impl->pre == tokenizer::PreTokenizer::kLlama3;
  }

  // Token types: as given, or inferred (byte tokens for SPM, specials by id).
  impl->types = vocab.token_types;
  if (impl->types.empty()) {
    impl->types.assign(n, TokenType::kNormal);
    for (size_t i = 0; i < n; ++i) {
      if (impl->kind == ModelKind::kSpm && parse_byte_token(vocab.tokens[i]) >= 0) {
        impl->types[i] = TokenType::kByte;
      }
    }
    if (vocab.unk_id >= 0) impl->types[vocab.unk_id] = TokenType::kUnknown;
    for (int32_t id : {vocab.bos_id, vocab.eos_id, vocab.eot_id, vocab.sep_id}) {
      if (id >= 0) impl->types[id] = TokenType::kControl;
    }
  }

  impl->token_to_id.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    // Duplicate texts map to the last id, as in llama.cpp.
    impl->token_to_id.insert_or_assign(vocab.tokens[i], static_cast<int32_t>(i));
  }

  impl->byte_token.fill(-1);
  if (impl->kind == ModelKind::kSpm) {
    for (int b = 0; b < 256; ++b) {
      char hex[7];
      std::snprintf(hex, sizeof(hex), "<0x%02X>", b);
      int32_t id = impl->lookup(hex);
      if (id < 0) id = impl->lookup(std::string(1, static_cast<char>(b)));
      impl->byte_token[b] = id;
    }
  }

  for (size_t i = 0; i < vocab.merges.size(); ++i) {
    const std::string& line = vocab.merges[i];
    const size_t space = line.find(' ', 1);
    if (space == std::string::npos) {
      return InvalidArgument("tokenizer: merge " + std::to_string(i) + " '" + line +
                             "' is not of the form 'A B'");
    }
    impl->merge_rank.emplace(line.substr(0, space) + ' ' + line.substr(space + 1),
                             static_cast<int32_t>(i));
  }

  for (size_t i = 0; i < n; ++i) {
    const TokenType t = impl->types[i];
    if (t == TokenType::kControl || t == TokenType::kUserDefined || t == TokenType::kUnknown) {
      impl->special_tokens.push_back(static_cast<int32_t>(i));
    }
  }
  std::stable_sort(
      impl->special_tokens.begin(), impl->special_tokens.end(),
      [&](int32_t a, int32_t b) { return vocab.tokens[a].size() > vocab.tokens[b].size(); });

  impl->eog.assign(n, false);
  for (int32_t id : {vocab.eos_id, vocab.eot_id}) {
    if (id >= 0) impl->eog[id] = true;
  }
  for (size_t i = 0; i < n; ++i) {
    const TokenType t = impl->types[i];
    if (t != TokenType::kControl && t != TokenType::kUserDefined) continue;
    for (std::string_view eog : kEogTexts) {
      if (vocab.tokens[i] == eog) impl->eog[i] = true;
    }
  }

  impl->vocab = std::move(vocab);
  return Tokenizer(std::move(impl));
}

Result<std::vector<int32_t>> Tokenizer::encode(std::string_view text, bool add_special,
                                               bool parse_special) const {
  const std::vector<TextRange> ranges = special_ranges_for(text, parse_special);
  return encode_with_special_ranges(text, add_special, ranges);
}

Result<std::vector<int32_t>> Tokenizer::encode_with_special_ranges(
    std::string_view text, bool add_special, std::span<const TextRange> special_ranges) const {
  const Impl& impl = *impl_;
  const Vocab& v = impl.vocab;
  std::vector<int32_t> out;
  HEARTH_ASSIGN_OR_RETURN(const std::vector<TextRange> ranges,
                          tokenizer::normalize_special_ranges(special_ranges, text.size()));
  const std::vector<tokenizer::Fragment> fragments =
      tokenizer::partition_special(impl, text, ranges);

  if (add_special && v.add_bos && v.bos_id >= 0) out.push_back(v.bos_id);
  if (impl.kind == ModelKind::kSpm) {
    // The dummy prefix goes before text that starts the input or follows a special
    // token, mirroring SentencePiece's per-sentence add_dummy_prefix.
    bool after_special = true;
    for (const tokenizer::Fragment& f : fragments) {
      if (f.token >= 0) {
        out.push_back(f.token);
        after_special = true;
        continue;
      }
      std::string escaped;
      if (v.add_space_prefix && after_special) escaped.append(kSpaceMarker);
      escaped += replace_spaces(f.text);
      tokenizer::spm_tokenize(impl, escaped, out);
      after_special = false;
    }
  } else {
    for (const tokenizer::Fragment& f : fragments) {
      if (f.token >= 0) {
        out.push_back(f.token);
      } else if (impl.kind == ModelKind::kWpm) {
        tokenizer::wpm_tokenize(impl, f.text, out);
      } else {
        tokenizer::bpe_tokenize(impl, f.text, out);
      }
    }
  }
  if (add_special && v.add_eos && v.eos_id >= 0) out.push_back(v.eos_id);
  if (add_special && v.add_sep && v.sep_id >= 0) out.push_back(v.sep_id);
  return out;
}

std::string Tokenizer::token_to_piece(int32_t id, bool render_special) const {
  if (!is_valid(id)) return {};
  const Impl& impl = *impl_;
  const std::string& text = impl.vocab.tokens[static_cast<size_t>(id)];
  switch (impl.types[static_cast<size_t>(id)]) {
    case TokenType::kControl:
    case TokenType::kUnknown:
      return render_special ? text : std::string();
    case TokenType::kUserDefined:
      return text;
    case TokenType::kUnused:
      return {};
    case TokenType::kByte: {
      const int b = parse_byte_token(text);
      if (b >= 0) return std::string(1, static_cast<char>(b));
      return text;
    }
    case TokenType::kNormal:
    case TokenType::kUndefined:
      break;
  }
  if (impl.kind != ModelKind::kBpe) return unescape_spaces(text);  // SPM, WordPiece
  // Byte-level BPE: each character stands for one byte. Characters outside the
  // byte-level alphabet (rare hand-added tokens) are kept as UTF-8.
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t start = pos;
    const uint32_t cp = tokenizer::decode_utf8(text, pos);
    const int b = tokenizer::unicode_to_byte(cp);
    if (b >= 0) {
      out.push_back(static_cast<char>(b));
    } else {
      out.append(text, start, pos - start);
    }
  }
  return out;
}

Result<std::string> Tokenizer::decode(std::span<const int32_t> ids, bool render_special) const {
  std::string out;
  // SPM's dummy prefix, WordPiece's word-start mark on the first word.
  bool strip_space = (impl_->kind == ModelKind::kSpm && impl_->vocab.add_space_prefix) ||
                     impl_->kind == ModelKind::kWpm;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (!is_valid(ids[i])) {
      return OutOfRange("decode: token " + std::to_string(ids[i]) + " at position " +
                        std::to_string(i) + " is outside the vocabulary of " +
                        std::to_string(n_vocab()) + " tokens");
    }
    std::string piece = token_to_piece(ids[i], render_special);
    if (strip_space && !piece.empty() && piece[0] == ' ') piece.erase(0, 1);
    strip_space = false;
    out += piece;
  }
  return out;
}

int32_t Tokenizer::n_vocab() const {
  return static_cast<int32_t>(impl_->vocab.tokens.size());
}
int32_t Tokenizer::bos_id() const {
  return impl_->vocab.bos_id;
}
int32_t Tokenizer::eos_id() const {
  return impl_->vocab.eos_id;
}
int32_t Tokenizer::eot_id() const {
  return impl_->vocab.eot_id;
}
int32_t Tokenizer::unk_id() const {
  return impl_->vocab.unk_id;
}
int32_t Tokenizer::pad_id() const {
  return impl_->vocab.pad_id;
}
int32_t Tokenizer::sep_id() const {
  return impl_->vocab.sep_id;
}
bool Tokenizer::add_bos() const {
  return impl_->vocab.add_bos && impl_->vocab.bos_id >= 0;
}
bool Tokenizer::add_eos() const {
  return impl_->vocab.add_eos && impl_->vocab.eos_id >= 0;
}
const std::string& Tokenizer::model() const {
  return impl_->vocab.model;
}
const std::string& Tokenizer::pre() const {
  return impl_->vocab.pre;
}
const Vocab& Tokenizer::vocab() const {
  return impl_->vocab;
}

bool Tokenizer::is_eog(int32_t id) const {
  return is_valid(id) && impl_->eog[id];
}

bool Tokenizer::is_control(int32_t id) const {
  return is_valid(id) && impl_->types[id] == TokenType::kControl;
}

TokenType Tokenizer::token_type(int32_t id) const {
  return is_valid(id) ? impl_->types[id] : TokenType::kUndefined;
}

std::string_view Tokenizer::token_text(int32_t id) const {
  return is_valid(id) ? std::string_view(impl_->vocab.tokens[id]) : std::string_view();
}

std::optional<int32_t> Tokenizer::find_token(std::string_view text) const {
  const int32_t id = impl_->lookup(text);
  if (id < 0) return std::nullopt;
  return id;
}

}  // namespace hearth
