// The model's LoRA adapters: the list (ids, paths, scales, file digests), loading and
// unloading them on the worker thread, and what each request runs with. A request's
// adapter set (non-zero scales) decides its cache namespace: the fingerprint is the
// cache's effective_fingerprint(base, set), so rows never cross adapter sets.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "runtime/model_worker.h"

namespace hearth::runtime {

namespace {

uint32_t scale_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

}  // namespace

std::vector<AdapterInfo> ModelWorker::list_adapters() const {
  std::lock_guard lock(mu_);
  std::vector<AdapterInfo> out;
  for (const LoadedAdapter& a : adapters_) out.push_back(a.info);
  return out;
}

Result<AdapterInfo> ModelWorker::load_adapter(const AdapterSpec& spec) {
  if (!std::isfinite(spec.scale)) return InvalidArgument("scale: must be a finite number");
  HEARTH_ASSIGN_OR_RETURN(Digest256 sha, sha256_file(spec.path));
  // On the worker thread, as every adapter change: ids are taken in order and only by
  // adapters that loaded.
  AdapterInfo info;
  HEARTH_RETURN_IF_ERROR(run_job([&](Backend& backend) -> Status {
    int32_t id;
    {
      std::lock_guard lock(mu_);
      id = next_adapter_id_;
    }
    HEARTH_RETURN_IF_ERROR(backend.load_adapter(id, spec.path));
    info = AdapterInfo{id, spec.path, spec.scale, to_hex(sha)};
    std::lock_guard lock(mu_);
    next_adapter_id_ = id + 1;
    adapters_.push_back(LoadedAdapter{info, sha});
    return OkStatus();
  }));
  return info;
}

Status ModelWorker::unload_adapter(int32_t id) {
  return run_job([&](Backend& backend) -> Status {
    auto uses = [id](const RequestPtr& r) {
      return r && std::any_of(r->adapters.begin(), r->adapters.end(),
                              [id](const AdapterUse& u) { return u.id == id; });
    };
    {
      std::lock_guard lock(mu_);
      auto it = std::find_if(adapters_.begin(), adapters_.end(),
                             [id](const LoadedAdapter& a) { return a.info.id == id; });
      if (it == adapters_.end())
        return NotFound("model '" + config_.id + "' has no LoRA adapter " + std::to_string(id));
      for (const RequestPtr& q : queue_)
        if (uses(q))
          return FailedPrecondition("LoRA adapter " + std::to_string(id) +
                                    " is in use by a queued request");
      for (const Slot& s : slots_)
        if (uses(s.request))
          return FailedPrecondition("LoRA adapter " + std::to_string(id) +
                                    " is in use by a running request");
      adapters_.erase(it);
    }
    return backend.unload_adapter(id);
  });
}

Status ModelWorker::set_adapter_scales(std::span<const AdapterScale> scales) {
  std::lock_guard lock(mu_);
  for (size_t i = 0; i < scales.size(); ++i) {
    const std::string field = std::string("[").append(std::to_string(i)).append("]");
    if (!std::isfinite(scales[i].scale)) return InvalidArgument(field + ".scale: must be finite");
    if (std::none_of(adapters_.begin(), adapters_.end(),
                     [&](const LoadedAdapter& a) { return a.info.id == scales[i].id; }))
      return InvalidArgument(field + ".id: model '" + config_.id + "' has no LoRA adapter " +
                             std::to_string(scales[i].id));
  }
  for (LoadedAdapter& a : adapters_) {
    a.info.scale = 0.0f;
    for (const AdapterScale& s : scales)
      if (s.id == a.info.id) a.info.scale = s.scale;
  }
  return OkStatus();
}

Status ModelWorker::resolve_adapters(Request& r) const {
  std::vector<std::pair<const LoadedAdapter*, float>> set;
  if (r.params.lora) {
    const auto& req = *r.params.lora;
    for (size_t i = 0; i < req.size(); ++i) {
      const std::string field = std::string("lora[").append(std::to_string(i)).append("]");
      if (!std::isfinite(req[i].scale)) return InvalidArgument(field + ".scale: must be finite");
      auto it = std::find_if(adapters_.begin(), adapters_.end(),
                             [&](const LoadedAdapter& a) { return a.info.id == req[i].id; });
      if (it == adapters_.end())
        return InvalidArgument(field + ".id: model '" + config_.id + "' has no LoRA adapter " +
                               std::to_string(req[i].id));
      for (size_t j = 0; j < i; ++j)
        if (req[j].id == req[i].id)
          return InvalidArgument(field + ".id: adapter " + std::to_string(req[i].id) +
                                 " is listed twice");
      if (req[i].scale != 0.0f) set.emplace_back(&*it, req[i].scale);
    }
  } else {
    for (const LoadedAdapter& a : adapters_)
      if (a.info.scale != 0.0f) set.emplace_back(&a, a.info.scale);
  }
  // The fingerprint's order (file digest, then scale bits), so two sets with one
  // fingerprint also add their deltas in one order (the same bits).
  std::sort(set.begin(), set.end(), [](const auto& x, const auto& y) {
    if (x.first->sha256 != y.first->sha256) return x.first->sha256 < y.first->sha256;
    return scale_bits(x.second) < scale_bits(y.second);
  });
  r.adapters.clear();
  std::vector<cache::LoraAdapterId> ids;
  for (const auto& [a, scale] : set) {
    r.adapters.push_back(AdapterUse{a->info.id, scale});
    ids.push_back(cache::LoraAdapterId{a->sha256, scale});
  }
  r.ns = ns_;
  r.ns.fingerprint = cache::effective_fingerprint(ns_.fingerprint, ids);
  return OkStatus();
}

Status ModelWorker::reload_adapters(Backend& backend) {
  std::vector<AdapterInfo> list = list_adapters();
  for (const AdapterInfo& a : list) HEARTH_RETURN_IF_ERROR(backend.load_adapter(a.id, a.path));
  return OkStatus();
}

}  // namespace hearth::runtime
