// cuda_api.h on the host, for the emulated GPU (tests/gpu_emu/README in CMake): "device"
// memory is host memory, copies are memcpy, a graph records the work between its capture
// calls and replays it. Device 0 exists; every other index is absent, as on a one-GPU box.
#include <cstdlib>
#include <cstring>
#include <memory>
#include <utility>

#include "emu_queue.h"
#include "engine/cuda/cuda_api.h"

namespace hearth::engine::cuda {

namespace emu {
std::vector<Work>*& capturing() {
  static std::vector<Work>* current = nullptr;
  return current;
}
}  // namespace emu

bool available(int device, std::string* why_not) {
  if (device == 0) return true;
  if (why_not != nullptr) {
    *why_not = "no CUDA device " + std::to_string(device) + " (the emulated machine has 1)";
  }
  return false;
}
int device_count() {
  return 1;
}
Error set_device(int device) {
  return device == 0 ? Error() : Error("cudaSetDevice: invalid device ordinal");
}
Error device_props(int device, DeviceProps* out) {
  if (device != 0) return "cudaGetDeviceProperties: invalid device ordinal";
  out->name = "emulated GPU";
  out->cc_major = 0;
  out->cc_minor = 0;
  out->sm_count = 1;
  out->total_mem = size_t{1} << 34;
  out->l2_bytes = 0;
  return {};
}

Stream::~Stream() = default;
Error Stream::create() {
  handle_ = this;
  return {};
}
Error Stream::sync() const {
  if (emu::capturing() != nullptr) return "cudaStreamSynchronize: the stream is capturing";
  return {};
}

namespace {
void* emu_alloc(size_t bytes) {
  // Poisoned, as device memory holds whatever was there: a read of a byte nobody wrote
  // shows up as NaNs or garbage rather than zeros.
  void* p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (p != nullptr) std::memset(p, 0xA5, bytes);
  return p;
}
}  // namespace

Error device_alloc(void** p, size_t bytes) {
  *p = emu_alloc(bytes);
  return *p != nullptr ? Error() : Error("cudaMalloc: out of memory");
}
void device_free(void* p) {
  std::free(p);
}
Error pinned_alloc(void** p, size_t bytes) {
  *p = emu_alloc(bytes);
  return *p != nullptr ? Error() : Error("cudaMallocHost: out of memory");
}
void pinned_free(void* p) {
  std::free(p);
}

Error copy_to_device(void* dst, const void* src, size_t bytes, const Stream&) {
  emu::submit([=] { std::memcpy(dst, src, bytes); });
  return {};
}
Error copy_to_host(void* dst, const void* src, size_t bytes, const Stream&) {
  emu::submit([=] { std::memcpy(dst, src, bytes); });
  return {};
}
Error copy_on_device(void* dst, const void* src, size_t bytes, const Stream&) {
  emu::submit([=] { std::memmove(dst, src, bytes); });
  return {};
}
Error fill_device(void* dst, int byte, size_t bytes, const Stream&) {
  emu::submit([=] { std::memset(dst, byte, bytes); });
  return {};
}
Error copy_2d(void* dst, size_t dst_pitch, const void* src, size_t src_pitch, size_t width,
              size_t height, const Stream&) {
  if (width > dst_pitch || width > src_pitch) return "cudaMemcpy2DAsync: width exceeds a pitch";
  emu::submit([=] {
    for (size_t r = 0; r < height; ++r) {
      std::memcpy(static_cast<char*>(dst) + r * dst_pitch,
                  static_cast<const char*>(src) + r * src_pitch, width);
    }
  });
  return {};
}
Error launch_error(const char*) {
  return {};
}

struct Recording {
  std::vector<emu::Work> work;
};

Graph::~Graph() {
  delete static_cast<Recording*>(graph_);
}
Error Graph::begin_capture(const Stream&) {
  if (emu::capturing() != nullptr) return "cudaStreamBeginCapture: already capturing";
  delete static_cast<Recording*>(graph_);
  auto* r = new Recording;
  graph_ = r;
  exec_ = nullptr;
  emu::capturing() = &r->work;
  return {};
}
Error Graph::end_capture(const Stream&) {
  if (emu::capturing() == nullptr) return "cudaStreamEndCapture: not capturing";
  emu::capturing() = nullptr;
  exec_ = graph_;
  return {};
}
Error Graph::launch(const Stream&) const {
  if (exec_ == nullptr) return "cudaGraphLaunch: not instantiated";
  for (const emu::Work& w : static_cast<Recording*>(exec_)->work) w();
  return {};
}

Timer::~Timer() = default;
Error Timer::start(const Stream&) {
  return {};
}
Error Timer::stop(const Stream&, float* ms) {
  *ms = 0;
  return {};
}

}  // namespace hearth::engine::cuda
