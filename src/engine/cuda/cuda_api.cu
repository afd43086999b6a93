// cuda_api.h over the CUDA runtime (linked statically: the binary needs the driver only).
#include <cuda_runtime.h>

#include <utility>

#include "engine/cuda/cuda_api.h"

namespace hearth::engine::cuda {
namespace {

Error error_of(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return {};
  return std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
}

cudaStream_t stream_of(const Stream& s) {
  return static_cast<cudaStream_t>(s.handle());
}

}  // namespace

bool available(int device, std::string* why_not) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    if (why_not != nullptr) *why_not = error_of(e, "cudaGetDeviceCount");
    return false;
  }
  if (device < 0 || device >= n) {
    if (why_not != nullptr) {
      *why_not = "no CUDA device " + std::to_string(device) + " (this machine has " +
                 std::to_string(n) + ")";
    }
    return false;
  }
  return true;
}

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky "no driver" error
    return 0;
  }
  return n;
}

Error set_device(int device) {
  return error_of(cudaSetDevice(device), "cudaSetDevice");
}

Error device_props(int device, DeviceProps* out) {
  cudaDeviceProp p{};
  if (Error e = error_of(cudaGetDeviceProperties(&p, device), "cudaGetDeviceProperties");
      !e.empty()) {
    return e;
  }
  out->name = p.name;
  out->cc_major = p.major;
  out->cc_minor = p.minor;
  out->sm_count = p.multiProcessorCount;
  out->total_mem = p.totalGlobalMem;
  out->l2_bytes = static_cast<size_t>(p.l2CacheSize);
  return {};
}

Stream::~Stream() {
  if (handle_ != nullptr) cudaStreamDestroy(static_cast<cudaStream_t>(handle_));
}

Error Stream::create() {
  cudaStream_t s = nullptr;
  if (Error e = error_of(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
      !e.empty()) {
    return e;
  }
  if (handle_ != nullptr) cudaStreamDestroy(static_cast<cudaStream_t>(handle_));
  handle_ = s;
  return {};
}

Error Stream::sync() const {
  return error_of(cudaStreamSynchronize(static_cast<cudaStream_t>(handle_)),
                  "cudaStreamSynchronize");
}

Error device_alloc(void** p, size_t bytes) {
  *p = nullptr;
  if (Error e = error_of(cudaMalloc(p, bytes), "cudaMalloc"); !e.empty()) {
    *p = nullptr;
    return e + " of " + std::to_string(bytes) + " bytes";
  }
  return {};
}

void device_free(void* p) {
  cudaFree(p);
}

Error pinned_alloc(void** p, size_t bytes) {
  *p = nullptr;
  if (Error e = error_of(cudaMallocHost(p, bytes), "cudaMallocHost"); !e.empty()) {
    *p = nullptr;
    return e + " of " + std::to_string(bytes) + " bytes";
  }
  return {};
}

void pinned_free(void* p) {
  cudaFreeHost(p);
}

Error copy_to_device(void* dst, const void* src, size_t bytes, const Stream& stream) {
  if (bytes == 0) return {};
  return error_of(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_of(stream)),
                  "cudaMemcpyAsync(host to device)");
}

Error copy_to_host(void* dst, const void* src, size_t bytes, const Stream& stream) {
  if (bytes == 0) return {};
  return error_of(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_of(stream)),
                  "cudaMemcpyAsync(device to host)");
}

Error copy_on_device(void* dst, const void* src, size_t bytes, const Stream& stream) {
  if (bytes == 0) return {};
  return error_of(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_of(stream)),
                  "cudaMemcpyAsync(device to device)");
}

Error fill_device(void* dst, int byte, size_t bytes, const Stream& stream) {
  if (bytes == 0) return {};
  return error_of(cudaMemsetAsync(dst, byte, bytes, stream_of(stream)), "cudaMemsetAsync");
}

Error copy_2d(void* dst, size_t dst_pitch, const void* src, size_t src_pitch, size_t width,
              size_t height, const Stream& stream) {
  if (width == 0 || height == 0) return {};
  return error_of(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, width, height,
                                    cudaMemcpyDefault, stream_of(stream)),
                  "cudaMemcpy2DAsync");
}

Error launch_error(const char* what) {
  return error_of(cudaGetLastError(), what);
}

Graph::~Graph() {
  if (exec_ != nullptr) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec_));
  if (graph_ != nullptr) cudaGraphDestroy(static_cast<cudaGraph_t>(graph_));
}

Error Graph::begin_capture(const Stream& stream) {
  return error_of(cudaStreamBeginCapture(stream_of(stream), cudaStreamCaptureModeThreadLocal),
                  "cudaStreamBeginCapture");
}

Error Graph::end_capture(const Stream& stream) {
  cudaGraph_t g = nullptr;
  if (Error e = error_of(cudaStreamEndCapture(stream_of(stream), &g), "cudaStreamEndCapture");
      !e.empty()) {
    if (g != nullptr) cudaGraphDestroy(g);
    (void)cudaGetLastError();
    return e;
  }
  cudaGraphExec_t exec = nullptr;
  if (Error e = error_of(cudaGraphInstantiateWithFlags(&exec, g, 0), "cudaGraphInstantiate"); !e.empty()) {
    cudaGraphDestroy(g);
    (void)cudaGetLastError();
    return e;
  }
  if (exec_ != nullptr) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec_));
  if (graph_ != nullptr) cudaGraphDestroy(static_cast<cudaGraph_t>(graph_));
  graph_ = g;
  exec_ = exec;
  return {};
}

Error Graph::launch(const Stream& stream) const {
  return error_of(cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec_), stream_of(stream)),
                  "cudaGraphLaunch");
}

Timer::~Timer() {
  if (begin_ != nullptr) cudaEventDestroy(static_cast<cudaEvent_t>(begin_));
  if (end_ != nullptr) cudaEventDestroy(static_cast<cudaEvent_t>(end_));
}

Error Timer::start(const Stream& stream) {
  if (begin_ == nullptr) {
    cudaEvent_t b = nullptr, e = nullptr;
    if (Error err = error_of(cudaEventCreate(&b), "cudaEventCreate"); !err.empty()) return err;
    if (Error err = error_of(cudaEventCreate(&e), "cudaEventCreate"); !err.empty()) {
      cudaEventDestroy(b);
      return err;
    }
    begin_ = b;
    end_ = e;
  }
  return error_of(cudaEventRecord(static_cast<cudaEvent_t>(begin_), stream_of(stream)),
                  "cudaEventRecord");
}

Error Timer::stop(const Stream& stream, float* ms) {
  if (begin_ == nullptr) return "Timer::stop without start";
  if (Error e = error_of(cudaEventRecord(static_cast<cudaEvent_t>(end_), stream_of(stream)),
                         "cudaEventRecord");
      !e.empty()) {
    return e;
  }
  if (Error e =
          error_of(cudaEventSynchronize(static_cast<cudaEvent_t>(end_)), "cudaEventSynchronize");
      !e.empty()) {
    return e;
  }
  return error_of(
      cudaEventElapsedTime(ms, static_cast<cudaEvent_t>(begin_), static_cast<cudaEvent_t>(end_)),
      "cudaEventElapsedTime");
}

}  // namespace hearth::engine::cuda
