// Unicode helpers for the tokenizers: UTF-8 decoding with llama.cpp's error policy,
// the general-category tests the BPE pre-tokenizers need, and GPT-2's byte-level
// byte <-> character mapping.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hearth::tokenizer {

constexpr uint32_t kReplacementChar = 0xFFFD;

// Length of the UTF-8 sequence a lead byte announces, judged by its high nibble
// only (1 for ASCII and stray continuation bytes, 2, 3 or 4).
size_t utf8_lead_length(uint8_t lead);

// Length of the character at `pos`: the lead byte's length when the continuation
// bytes are there, else 1 (so a broken sequence never swallows the next character).
size_t utf8_char_length(std::string_view s, size_t pos);

// Decodes the codepoint at `pos` and advances past it. An invalid or truncated
// sequence yields U+FFFD and advances one byte.
uint32_t decode_utf8(std::string_view s, size_t& pos);
std::vector<uint32_t> utf8_to_codepoints(std::string_view s);
void append_utf8(std::string& out, uint32_t cp);
std::string codepoint_to_utf8(uint32_t cp);

// General categories (Unicode data generated into unicode_tables.inc).
bool is_letter(uint32_t cp);       // \p{L}
bool is_number(uint32_t cp);       // \p{N}
bool is_punctuation(uint32_t cp);  // \p{P}
bool is_control(uint32_t cp);      // Cc, Cf, Co, Cs (not unassigned Cn)
bool is_symbol(uint32_t cp);       // \p{S}
// Simple case mapping: the first codepoint of the character's lowercase form.
uint32_t to_lower(uint32_t cp);
// The first codepoint of the character's NFD decomposition (a precomposed letter ->
// its base letter; the combining marks are dropped), as llama.cpp's WordPiece
// normalizes.
uint32_t nfd_first(uint32_t cp);
// The Unicode White_Space property (what llama.cpp's \s means after its rewriting).
bool is_whitespace(uint32_t cp);

// GPT-2 byte-level encoding: every byte maps to one printable character.
const std::string& byte_to_unicode(uint8_t byte);
// The byte a byte-level character stands for, or -1 if it is not one.
int unicode_to_byte(uint32_t cp);

}  // namespace hearth::tokenizer
