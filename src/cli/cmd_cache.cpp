// `hearth cache {ls,stat,verify,gc,evict} --dir DIR`: offline maintenance of a
// cache directory (a disk or ram_file tier). ls/stat/verify only read; gc and
// evict change the directory and must not run against a live server's tier.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "cache/file_tier.h"
#include "cli/registry.h"
#include "common/json_text.h"
#include "hearth/cache/cache.h"

namespace hearth::cli {
namespace {

using namespace hearth::cache;

struct Listing {
  std::vector<ScannedFile> rows;
  std::vector<std::pair<std::string, std::string>> bad;  // path, reason
  uint64_t tmp_files = 0;
  uint64_t other_files = 0;
};

// Read-only walk: never deletes anything.
Result<Listing> list_dir(const std::string& dir) {
  FileTier tier(Tier::kDisk, dir, posix_io());
  std::vector<std::string> names;
  int r = posix_io()->list_dir(dir, &names);
  if (r < 0) return IoError("cannot list " + dir);
  std::sort(names.begin(), names.end());
  Listing out;
  for (const auto& name : names) {
    std::string path = dir + "/" + name;
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".tmp") == 0) {
      ++out.tmp_files;
      continue;
    }
    if (name.size() <= 4 || name.compare(name.size() - 4, 4, ".kvc") != 0) {
      ++out.other_files;
      continue;
    }
    auto meta = tier.read_meta(path);
    if (!meta.ok()) {
      out.bad.emplace_back(path, meta.status().message());
      continue;
    }
    if (to_hex(meta->info.key()) + ".kvc" != name) {
      out.bad.emplace_back(path, "file name does not match the key replayed from its TLVs");
      continue;
    }
    out.rows.push_back(std::move(meta).value());
  }
  return out;
}

nlohmann::json row_json(const ScannedFile& f) {
  return {{"key", to_hex(f.info.key())},
          {"size", f.size},
          {"payload_bytes", f.info.payload_length},
          {"tokens", f.info.tokens.size()},
          {"hits", f.info.hit_count},
          {"save_reason", save_reason_name(f.info.save_reason)},
          {"quant", quant_type_name(f.info.ns.quant)},
          {"context_size", f.info.context_size},
          {"created", f.info.creation_time},
          {"last_used", f.info.last_used_time}};
}

int cmd_ls(const std::string& dir, bool json) {
  auto l = list_dir(dir);
  if (!l.ok()) {
    std::fprintf(stderr, "hearth cache ls: %s\n", l.status().to_string().c_str());
    return 1;
  }
  if (json) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& f : l->rows) arr.push_back(row_json(f));
    std::printf("%s\n", json_text(arr, 2).c_str());
    return 0;
  }
  std::printf("%-64s %12s %8s %6s %-9s\n", "key", "bytes", "tokens", "hits", "reason");
  for (const auto& f : l->rows) {
    std::printf("%-64s %12llu %8zu %6u %-9s\n", to_hex(f.info.key()).c_str(),
                static_cast<unsigned long long>(f.size), f.info.tokens.size(), f.info.hit_count,
                save_reason_name(f.info.save_reason));
  }
  for (const auto& [path, why] : l->bad) std::printf("BAD %s: %s\n", path.c_str(), why.c_str());
  return 0;
}

int cmd_stat(const std::string& dir, bool json) {
  auto l = list_dir(dir);
  if (!l.ok()) {
    std::fprintf(stderr, "hearth cache stat: %s\n", l.status().to_string().c_str());
    return 1;
  }
  uint64_t bytes = 0, payload = 0, tokens = 0, hits = 0;
  std::map<std::string, uint64_t> by_reason;
  for (const auto& f : l->rows) {
    bytes += f.size;
    payload += f.info.payload_length;
    tokens += f.info.tokens.size();
    hits += f.info.hit_count;
    by_reason[save_reason_name(f.info.save_reason)]++;
  }
  nlohmann::json j = {{"dir", dir},
                      {"rows", l->rows.size()},
                      {"bytes", bytes},
                      {"payload_bytes", payload},
                      {"tokens", tokens},
                      {"hits", hits},
                      {"by_save_reason", by_reason},
                      {"invalid_files", l->bad.size()},
                      {"tmp_files", l->tmp_files},
                      {"other_files", l->other_files}};
  if (json) {
    std::printf("%s\n", json_text(j, 2).c_str());
  } else {
    for (auto& [k, v] : j.items()) std::printf("%-15s %s\n", k.c_str(), json_text(v).c_str());
  }
  return 0;
}

int cmd_verify(const std::string& dir) {
  auto l = list_dir(dir);
  if (!l.ok()) {
    std::fprintf(stderr, "hearth cache verify: %s\n", l.status().to_string().c_str());
    return 1;
  }
  FileTier tier(Tier::kDisk, dir, posix_io());
  size_t bad = l->bad.size();
  for (const auto& [path, why] : l->bad) std::printf("BAD %s: %s\n", path.c_str(), why.c_str());
  for (const auto& f : l->rows) {
    Status s = tier.verify(f.path, f.info.key());
    if (!s.ok()) {
      ++bad;
      std::printf("BAD %s: %s\n", f.path.c_str(), s.message().c_str());
    }
  }
  std::printf("verified %zu rows: %zu ok, %zu bad\n", l->rows.size() + l->bad.size(),
              l->rows.size() + l->bad.size() - bad, bad);
  return bad == 0 ? 0 : 1;
}

Result<std::unique_ptr<Cache>> open_offline(const std::string& dir) {
  CacheConfig cfg;
  cfg.disk_dir = dir;
  cfg.disk_quota_bytes = UINT64_MAX;
  cfg.sweep_interval_ms = 0;
  return Cache::open(cfg);  // the start-up scan removes *.tmp and invalid files
}

int cmd_gc(const std::string& dir, bool all) {
  auto before = list_dir(dir);
  auto cache = open_offline(dir);
  if (!cache.ok()) {
    std::fprintf(stderr, "hearth cache gc: %s\n", cache.status().to_string().c_str());
    return 1;
  }
  uint64_t evicted = all ? (*cache)->gc() : 0;
  std::printf("removed %llu tmp files, %zu invalid files, evicted %llu rows\n",
              static_cast<unsigned long long>(before.ok() ? before->tmp_files : 0),
              before.ok() ? before->bad.size() : 0, static_cast<unsigned long long>(evicted));
  return 0;
}

int cmd_evict(const std::string& dir, uint64_t bytes) {
  auto cache = open_offline(dir);
  if (!cache.ok()) {
    std::fprintf(stderr, "hearth cache evict: %s\n", cache.status().to_string().c_str());
    return 1;
  }
  EvictResult r = (*cache)->evict_bytes(bytes);
  std::printf("evicted %llu rows, %llu bytes\n", static_cast<unsigned long long>(r.rows),
              static_cast<unsigned long long>(r.bytes));
  return 0;
}

Registrar reg("cache", [](CLI::App& root) {
  auto* cmd = root.add_subcommand("cache", "Offline maintenance of a KV cache directory");
  cmd->require_subcommand(1);
  struct Opts {
    std::string dir;
    bool json = false;
    bool all = false;
    uint64_t bytes = 0;
  };
  auto opts = std::make_shared<Opts>();

  auto* ls = cmd->add_subcommand("ls", "List rows (read-only)");
  ls->add_option("--dir", opts->dir, "Cache directory")->required();
  ls->add_flag("--json", opts->json, "JSON output");
  ls->callback([opts] { exit_code() = cmd_ls(opts->dir, opts->json); });

  auto* st = cmd->add_subcommand("stat", "Summary of a cache directory (read-only)");
  st->add_option("--dir", opts->dir, "Cache directory")->required();
  st->add_flag("--json", opts->json, "JSON output");
  st->callback([opts] { exit_code() = cmd_stat(opts->dir, opts->json); });

  auto* vf = cmd->add_subcommand(
      "verify", "Full CRC32C and key replay of every row; exit 1 on any bad row (read-only)");
  vf->add_option("--dir", opts->dir, "Cache directory")->required();
  vf->callback([opts] { exit_code() = cmd_verify(opts->dir); });

  auto* gc = cmd->add_subcommand("gc", "Remove temp and invalid files; --all evicts every row");
  gc->add_option("--dir", opts->dir, "Cache directory")->required();
  gc->add_flag("--all", opts->all, "Also evict every row");
  gc->callback([opts] { exit_code() = cmd_gc(opts->dir, opts->all); });

  auto* ev = cmd->add_subcommand("evict", "Evict least-recently-used rows");
  ev->add_option("--dir", opts->dir, "Cache directory")->required();
  ev->add_option("--bytes", opts->bytes, "Free at least this many bytes")->required();
  ev->callback([opts] { exit_code() = cmd_evict(opts->dir, opts->bytes); });
});

}  // namespace
}  // namespace hearth::cli
