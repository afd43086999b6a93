#include "engine/tokenizer/pretokenizer.h"

#include <algorithm>
#include <functional>

#include "engine/tokenizer/unicode.h"

namespace hearth::tokenizer {
namespace {

// A matcher looks at codepoints [pos, end) of the fragment [begin, end) and returns
// the length of the match starting exactly at pos, or 0 when the regex does not
// match there. (None of the regexes can match the empty string.)
using Matcher =
    std::function<size_t(const std::vector<uint32_t>& cps, size_t pos, size_t begin, size_t end)>;

struct Range {
  uint32_t lo;
  uint32_t hi;
};

bool in(const Range* begin, const Range* end, uint32_t cp) {
  for (const Range* r = begin; r != end; ++r) {
    if (cp >= r->lo && cp <= r->hi) return true;
  }
  return false;
}

// "Other" in [^\s\p{L}\p{N}]: anything that is not whitespace, letter or number.
bool is_other(uint32_t cp) {
  return !is_whitespace(cp) && !is_letter(cp) && !is_number(cp);
}

bool is_cr_or_lf(uint32_t cp) {
  return cp == '\r' || cp == '\n';
}

size_t run_length(const std::vector<uint32_t>& cps, size_t pos, size_t end,
                  bool (*pred)(uint32_t)) {
  size_t p = pos;
  while (p < end && pred(cps[p])) ++p;
  return p - pos;
}

// 's|'t|'re|'ve|'m|'ll|'d, optionally ASCII case-insensitive.
size_t match_contraction(const std::vector<uint32_t>& cps, size_t pos, size_t end,
                         bool ignore_case) {
  if (cps[pos] != '\'' || pos + 1 >= end) return 0;
  const auto lower = [&](uint32_t c) { return (ignore_case && c >= 'A' && c <= 'Z') ? c + 32 : c; };
  const uint32_t a = lower(cps[pos + 1]);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if (pos + 2 >= end) return 0;
  const uint32_t b = lower(cps[pos + 2]);
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

// \s+(?!\S) then \s+ : a whitespace run, leaving its last character for the next
// word when a non-space follows.
size_t match_trailing_space(const std::vector<uint32_t>& cps, size_t pos, size_t end) {
  const size_t n = run_length(cps, pos, end, is_whitespace);
  if (n > 1 && pos + n < end) return n - 1;
  return n;
}

// GPT-2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
size_t match_gpt2(const std::vector<uint32_t>& cps, size_t pos, size_t end) {
  if (size_t n = match_contraction(cps, pos, end, /*ignore_case=*/false)) return n;
  const size_t body = (cps[pos] == ' ' && pos + 1 < end) ? pos + 1 : pos;
  const uint32_t c = cps[body];
  if (body == pos + 1 || cps[pos] != ' ') {
    if (is_letter(c)) return body - pos + run_length(cps, body, end, is_letter);
    if (is_number(c)) return body - pos + run_length(cps, body, end, is_number);
    if (is_other(c)) return body - pos + run_length(cps, body, end, is_other);
  }
  return match_trailing_space(cps, pos, end);
}

// Llama 3 (max_digits 3) and Qwen2 (max_digits 1):
// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,max}|
//  ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
size_t match_llama3(const std::vector<uint32_t>& cps, size_t pos, size_t end, size_t max_digits) {
  if (size_t n = match_contraction(cps, pos, end, /*ignore_case=*/true)) return n;
  const uint32_t c = cps[pos];
  if (is_letter(c)) return run_length(cps, pos, end, is_letter);
  if (!is_cr_or_lf(c) && !is_number(c) && pos + 1 < end && is_letter(cps[pos + 1])) {
    return 1 + run_length(cps, pos + 1, end, is_letter);
  }
  if (is_number(c)) {
    size_t n = 1;  // bounded scan: a long digit run must not cost quadratic time
    while (n < max_digits && pos + n < end && is_number(cps[pos + n])) ++n;
    return n;
  }
  const size_t body = (c == ' ' && pos + 1 < end && is_other(cps[pos + 1])) ? pos + 1 : pos;
  if (is_other(cps[body])) {
    size_t p = body + run_length(cps, body, end, is_other);
    p += run_length(cps, p, end, is_cr_or_lf);
    return p - pos;
  }
  // \s*[\r\n]+ : up to and including the last CR/LF of the whitespace run.
  const size_t n = run_length(cps, pos, end, is_whitespace);
  for (size_t k = n; k > 0; --k) {
    if (is_cr_or_lf(cps[pos + k - 1])) return k;
  }
  return match_trailing_space(cps, pos, end);
}

// A run of codepoints satisfying pred, optionally preceded by one whitespace (\s?X+).
size_t match_opt_space_run(const std::vector<uint32_t>& cps, size_t pos, size_t end,
                           const std::function<bool(uint32_t)>& pred) {
  size_t p = pos;
  if (is_whitespace(cps[p]) && p + 1 < end && pred(cps[p + 1])) ++p;
  size_t q = p;
  while (q < end && pred(cps[q])) ++q;
  return q == p ? 0 : q - pos;
}

size_t match_run(const std::vector<uint32_t>& cps, size_t pos, size_t end,
                 const std::function<bool(uint32_t)>& pred) {
  size_t q = pos;
  while (q < end && pred(cps[q])) ++q;
  return q - pos;
}

// [\p{P}$+<=>^~|] (default) or [\p{P}$+<=>^~|`] (falcon), as runs.
bool is_default_punct(uint32_t cp) {
  return is_punctuation(cp) || cp == '$' || cp == '+' || cp == '<' || cp == '=' || cp == '>' ||
         cp == '^' || cp == '~' || cp == '|';
}
bool is_falcon_punct(uint32_t cp) {
  return is_default_punct(cp) || cp == '`';
}
bool is_ascii_digit(uint32_t cp) {
  return cp >= '0' && cp <= '9';
}

// DeepSeek LLM's explicit letter list (cased letters), from its tokenizer.json.
constexpr Range kDeepseekLetters[] = {
    {0x41, 0x5A},       {0x61, 0x7A},       {0xB5, 0xB5},       {0xC0, 0xD6},
    {0xD8, 0xF6},       {0xF8, 0x1BA},      {0x1BC, 0x1BF},     {0x1C4, 0x293},
    {0x295, 0x2AF},     {0x370, 0x373},     {0x376, 0x377},     {0x37B, 0x37D},
    {0x37F, 0x37F},     {0x386, 0x386},     {0x388, 0x38A},     {0x38C, 0x38C},
    {0x38E, 0x3A1},     {0x3A3, 0x3F5},     {0x3F7, 0x481},     {0x48A, 0x52F},
    {0x531, 0x556},     {0x10A0, 0x10C5},   {0x13A0, 0x13F5},   {0x13F8, 0x13FD},
    {0x1C90, 0x1CBA},   {0x1CBD, 0x1CBF},   {0x1D00, 0x1D2B},   {0x1D6B, 0x1D77},
    {0x1D79, 0x1D9A},   {0x1E00, 0x1F15},   {0x1F18, 0x1F1D},   {0x1F20, 0x1F45},
    {0x1F48, 0x1F4D},   {0x1F50, 0x1F57},   {0x1F59, 0x1F59},   {0x1F5B, 0x1F5B},
    {0x1F5D, 0x1F5D},   {0x1F5F, 0x1F7D},   {0x1F80, 0x1FB4},   {0x1FB6, 0x1FBC},
    {0x1FBE, 0x1FBE},   {0x1FC2, 0x1FC4},   {0x1FC6, 0x1FCC},   {0x1FD0, 0x1FD3},
    {0x1FD6, 0x1FDB},   {0x1FE0, 0x1FEC},   {0x1FF2, 0x1FF4},   {0x1FF6, 0x1FFC},
    {0x2102, 0x2102},   {0x2107, 0x2107},   {0x210A, 0x2113},   {0x2115, 0x2115},
    {0x2119, 0x211D},   {0x2124, 0x2124},   {0x2126, 0x2126},   {0x2128, 0x2128},
    {0x212A, 0x212D},   {0x212F, 0x2134},   {0x2139, 0x2139},   {0x213C, 0x213F},
    {0x2145, 0x2149},   {0x214E, 0x214E},   {0x2183, 0x2184},   {0x2C00, 0x2C7B},
    {0x2C7E, 0x2CE4},   {0x2CEB, 0x2CEE},   {0x2CF2, 0x2CF3},   {0xA640, 0xA66D},
    {0xA680, 0xA69B},   {0xA722, 0xA76F},   {0xA771, 0xA787},   {0xA78B, 0xA78E},
    {0xAB70, 0xABBF},   {0xFB00, 0xFB06},   {0xFB13, 0xFB17},   {0xFF21, 0xFF3A},
    {0xFF41, 0xFF5A},   {0x10400, 0x1044F}, {0x104B0, 0x104D3}, {0x104D8, 0x104FB},
    {0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2}, {0x118A0, 0x118DF}, {0x1E900, 0x1E943},
};
bool is_deepseek_letter(uint32_t cp) {
  return in(std::begin(kDeepseekLetters), std::end(kDeepseekLetters), cp);
}

// [!-/:-~！-／：-～‘-‟　-。]. llama.cpp rewrites non-ASCII whitespace to U+000B before
// matching these literal classes, so U+3000 never matches the class.
constexpr Range kDeepseekPunct[] = {{0x21, 0x2F},     {0x3A, 0x7E},     {0xFF01, 0xFF0F},
                                    {0xFF1A, 0xFF5E}, {0x2018, 0x201F}, {0x3000, 0x3002}};
bool is_deepseek_punct(uint32_t cp) {
  return !is_whitespace(cp) && in(std::begin(kDeepseekPunct), std::end(kDeepseekPunct), cp);
}

// [一-龥ࠀ-一가-퟿] (CJK, a wide block range, Hangul), minus whitespace as above.
constexpr Range kDeepseekCjk[] = {{0x4E00, 0x9FA5}, {0x0800, 0x4E00}, {0xAC00, 0xD7FF}};
bool is_deepseek_cjk(uint32_t cp) {
  return !is_whitespace(cp) && in(std::begin(kDeepseekCjk), std::end(kDeepseekCjk), cp);
}

const Matcher kGpt2 = [](const std::vector<uint32_t>& cps, size_t pos, size_t, size_t end) {
  return match_gpt2(cps, pos, end);
};
const Matcher kNumberEach = [](const std::vector<uint32_t>& cps, size_t pos, size_t,
                               size_t) -> size_t { return is_number(cps[pos]) ? 1 : 0; };
const Matcher kNumberRun = [](const std::vector<uint32_t>& cps, size_t pos, size_t, size_t end) {
  return match_run(cps, pos, end, is_number);
};
const Matcher kThreeDigits = [](const std::vector<uint32_t>& cps, size_t pos, size_t,
                                size_t end) -> size_t {
  return (pos + 3 <= end && is_ascii_digit(cps[pos]) && is_ascii_digit(cps[pos + 1]) &&
          is_ascii_digit(cps[pos + 2]))
             ? 3
             : 0;
};
const Matcher kCrOrLf = [](const std::vector<uint32_t>& cps, size_t pos, size_t, size_t) -> size_t {
  return is_cr_or_lf(cps[pos]) ? 1 : 0;
};
const Matcher kDeepseekCjkRun = [](const std::vector<uint32_t>& cps, size_t pos, size_t,
                                   size_t end) {
  return match_run(cps, pos, end, is_deepseek_cjk);
};

std::vector<Matcher> matchers_for(PreTokenizer kind) {
  switch (kind) {
    case PreTokenizer::kGpt2:
      return {kGpt2};
    case PreTokenizer::kLlama3:
      return {[](const std::vector<uint32_t>& c, size_t p, size_t, size_t e) {
        return match_llama3(c, p, e, 3);
      }};
    case PreTokenizer::kQwen2:
      return {[](const std::vector<uint32_t>& c, size_t p, size_t, size_t e) {
        return match_llama3(c, p, e, 1);
      }};
    case PreTokenizer::kStarcoder:
      return {kNumberEach, kGpt2};
    case PreTokenizer::kFalcon:
      return {[](const std::vector<uint32_t>& c, size_t p, size_t, size_t e) {
                return match_run(c, p, e, is_falcon_punct);
              },
              kGpt2, kThreeDigits};
    case PreTokenizer::kDeepseekLlm:
      return {kCrOrLf,
              [](const std::vector<uint32_t>& c, size_t p, size_t, size_t e) {
                return match_opt_space_run(c, p, e, is_deepseek_letter);
              },
              [](const std::vector<uint32_t>& c, size_t p, size_t, size_t e) {
                return match_opt_space_run(c, p, e, is_deepseek_punct);
              },
              // \s+$ : the whitespace run that ends the fragment.
              [](const std::vector<uint32_t>& c, size_t p, size_t b, size_t e) -> size_t {
                // Inside a run that already failed from an earlier position: fail
                // fast, or a long run of spaces would cost quadratic time.
                if (p > b && is_whitespace(c[p - 1])) return 0;
                const size_t n = run_length(c, p, e, is_whitespace);
                return p + n == e ? n : 0;
              },
              kDeepseekCjkRun, kNumberRun};
    case PreTokenizer::kDeepseekCoder:
      return {kCrOrLf,
              [](const std::vector<uint32_t>& c, size_t p, size_t, size_t e) {
                return match_opt_space_run(c, p, e, is_letter);
              },
              [](const std::vector<uint32_t>& c, size_t p, size_t, size_t e) {
                return match_opt_space_run(c, p, e, is_punctuation);
              },
              kDeepseekCjkRun, kNumberEach};
    case PreTokenizer::kDefault:
      return {[](const std::vector<uint32_t>& c, size_t p, size_t, size_t e) {
                return match_run(c, p, e, is_default_punct);
              },
              kGpt2, kNumberRun, kThreeDigits};
  }
  return {kGpt2};
}

// Re-splits every fragment with one matcher: matches and the gaps between them
// both become fragments.
std::vector<size_t> split_with(const Matcher& match, const std::vector<uint32_t>& cps,
                               const std::vector<size_t>& fragments) {
  std::vector<size_t> out;
  out.reserve(fragments.size() * 2);
  size_t start = 0;
  for (size_t len : fragments) {
    const size_t end = start + len;
    size_t gap_start = start;
    size_t pos = start;
    while (pos < end) {
      const size_t n = match(cps, pos, start, end);
      if (n == 0) {
        ++pos;
        continue;
      }
      if (pos > gap_start) out.push_back(pos - gap_start);
      out.push_back(n);
      pos += n;
      gap_start = pos;
    }
    if (end > gap_start) out.push_back(end - gap_start);
    start = end;
  }
  return out;
}

}  // namespace

Result<PreTokenizer> pre_tokenizer_from_name(std::string_view name) {
  struct Entry {
    std::string_view name;
    PreTokenizer kind;
  };
  static constexpr Entry kNames[] = {
      {"default", PreTokenizer::kDefault},
      {"", PreTokenizer::kDefault},
      {"llama3", PreTokenizer::kLlama3},
      {"llama-v3", PreTokenizer::kLlama3},
      {"llama-bpe", PreTokenizer::kLlama3},
      {"dbrx", PreTokenizer::kLlama3},
      {"smaug-bpe", PreTokenizer::kLlama3},
      {"falcon3", PreTokenizer::kLlama3},
      {"pixtral", PreTokenizer::kLlama3},
      {"deepseek-llm", PreTokenizer::kDeepseekLlm},
      {"deepseek-coder", PreTokenizer::kDeepseekCoder},
      {"falcon", PreTokenizer::kFalcon},
      {"mpt", PreTokenizer::kGpt2},
      {"gpt-2", PreTokenizer::kGpt2},
      {"gpt2", PreTokenizer::kGpt2},
      {"olmo", PreTokenizer::kGpt2},
      {"phi-2", PreTokenizer::kGpt2},
      {"jais", PreTokenizer::kGpt2},
      {"roberta-bpe", PreTokenizer::kGpt2},
      {"starcoder", PreTokenizer::kStarcoder},
      {"refact", PreTokenizer::kStarcoder},
      {"command-r", PreTokenizer::kStarcoder},
      {"smollm", PreTokenizer::kStarcoder},
      {"codeshell", PreTokenizer::kStarcoder},
      {"exaone", PreTokenizer::kStarcoder},
      {"minerva-7b", PreTokenizer::kStarcoder},
      {"qwen2", PreTokenizer::kQwen2},
      {"deepseek-r1-qwen", PreTokenizer::kQwen2},
      {"stablelm2", PreTokenizer::kQwen2},
  };
  for (const Entry& e : kNames) {
    if (e.name == name) return e.kind;
  }
  return Unsupported("tokenizer.ggml.pre '" + std::string(name) +
                     "' is not a supported BPE pre-tokenizer");
}

std::vector<size_t> pre_tokenize(PreTokenizer kind, const std::vector<uint32_t>& codepoints) {
  std::vector<size_t> fragments;
  if (codepoints.empty()) return fragments;
  fragments.push_back(codepoints.size());
  for (const Matcher& m : matchers_for(kind)) fragments = split_with(m, codepoints, fragments);
  return fragments;
}

}  // namespace hearth::tokenizer
