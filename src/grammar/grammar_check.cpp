#include "grammar/grammar_check.h"

#include <algorithm>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

namespace hearth::grammar {

void CharClass::finish() {
  std::sort(ranges.begin(), ranges.end());
  std::vector<std::pair<uint32_t, uint32_t>> merged;
  for (const auto& r : ranges) {
    if (!merged.empty() && r.first <= merged.back().second + 1) {
      merged.back().second = std::max(merged.back().second, r.second);
    } else {
      merged.push_back(r);
    }
  }
  ranges = std::move(merged);
  ascii[0] = ascii[1] = 0;
  for (uint32_t cp = 0; cp < 128; ++cp) {
    if (matches_slow(cp)) ascii[cp >> 6] |= uint64_t{1} << (cp & 63);
  }
}

bool CharClass::matches_slow(uint32_t cp) const {
  // ranges are sorted: the last range starting at or before cp decides.
  auto it = std::upper_bound(ranges.begin(), ranges.end(), std::make_pair(cp, UINT32_MAX));
  const bool in = it != ranges.begin() && std::prev(it)->second >= cp;
  return in != negated;
}

bool CharClass::intersects(uint32_t lo, uint32_t hi) const {
  if (!negated) {
    for (const auto& r : ranges) {
      if (r.first <= hi && r.second >= lo) return true;
    }
    return false;
  }
  // Negated: some point of [lo, hi] lies outside every range.
  uint32_t next = lo;  // lowest point not yet known to be covered
  for (const auto& r : ranges) {
    if (r.second < next) continue;
    if (r.first > next) return true;
    if (r.second >= hi) return false;
    next = r.second + 1;
  }
  return next <= hi;
}

void GrammarData::index_same_rest() {
  same_rest.assign(elems.size(), 0);
  // Each suffix gets an id from (its first element, the id of the suffix after it),
  // the empty suffix (a kEnd) being 0; equal ids are equal suffixes.
  std::unordered_map<uint64_t, uint32_t> ids;
  std::vector<uint32_t> first_at{0};  // by id: a position with that suffix
  std::vector<uint32_t> id_at(elems.size(), 0);
  for (size_t p = elems.size(); p-- > 0;) {
    const Element& e = elems[p];
    if (e.type == ElemType::kEnd) {
      id_at[p] = 0;
      same_rest[p] = static_cast<uint32_t>(p);
      continue;
    }
    const uint32_t rest = id_at[p + 1];  // a kEnd always follows, so p + 1 exists
    const uint64_t key =
        (uint64_t{rest} << 32) | (uint64_t{e.arg} << 1) | (e.type == ElemType::kRef ? 1u : 0u);
    auto [it, fresh] = ids.try_emplace(key, static_cast<uint32_t>(first_at.size()));
    if (fresh) first_at.push_back(static_cast<uint32_t>(p));
    id_at[p] = it->second;
    same_rest[p] = first_at[it->second];
  }
}

Status check_left_recursion(const GrammarData& g) {
  const size_t n = g.rules.size();
  // Nullable rules (can match the empty string), by fixpoint.
  std::vector<bool> nullable(n, false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < n; ++r) {
      if (nullable[r]) continue;
      for (uint32_t alt : g.rules[r].alts) {
        bool all = true;
        for (uint32_t p = alt; g.elems[p].type != ElemType::kEnd; ++p) {
          const Element& e = g.elems[p];
          if (e.type == ElemType::kClass || !nullable[e.arg]) {
            all = false;
            break;
          }
        }
        if (all) {
          nullable[r] = true;
          changed = true;
          break;
        }
      }
    }
  }
  // Edges r -> s where s can be entered before r consumed anything.
  std::vector<std::vector<uint32_t>> left(n);
  for (size_t r = 0; r < n; ++r) {
    for (uint32_t alt : g.rules[r].alts) {
      for (uint32_t p = alt; g.elems[p].type == ElemType::kRef; ++p) {
        left[r].push_back(g.elems[p].arg);
        if (!nullable[g.elems[p].arg]) break;
      }
    }
  }
  std::vector<uint8_t> color(n, 0);  // 0 new, 1 on the path, 2 done
  std::string cycle;
  std::function<bool(uint32_t)> visit = [&](uint32_t r) {
    color[r] = 1;
    for (uint32_t s : left[r]) {
      if (color[s] == 1) {
        cycle = g.rules[s].name;
        return true;
      }
      if (color[s] == 0 && visit(s)) return true;
    }
    color[r] = 2;
    return false;
  };
  for (uint32_t r = 0; r < n; ++r) {
    if (color[r] == 0 && visit(r)) {
      return InvalidArgument("rule '" + cycle +
                             "' is left-recursive (it can reach itself without matching a "
                             "character)");
    }
  }
  return OkStatus();
}

}  // namespace hearth::grammar
