// The emulated CUDA runtime: one device whose memory is host pages that host code cannot touch
// (they are opened only while a kernel or a copy runs), copies that check their direction and
// bounds as the driver would, and streams on which everything completes at once (each stream's
// operations are counted, so tests can tell which stream work went to). The memory is never
// reused: enough for tests, whose models are small.
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <vector>

#include "cuda_runtime.h"
#include "tests/model/cuda/emulator/emulator.h"

namespace transerve_cuda_emulator {
namespace {

constexpr size_t kDeviceBytes = size_t{4} << 30;  // the emulated device's memory
constexpr size_t kAlignment = 256;                // cudaMalloc's guarantee

// Device memory is one reserved range handed out front to back and never reused, so a pointer
// kept after cudaFree still fails the checks below. Opening or closing it is one mprotect of
// the used part.
struct Device {
  std::recursive_mutex mu;
  char* arena = nullptr;
  size_t used = 0;
  std::map<const char*, size_t> allocations;  // live: data address -> bytes requested
  int open = 0;                               // DeviceAccess depth
  size_t limit = kDeviceBytes;                // `used` may not pass it (tests lower it)
};

Device& TheDevice() {
  static Device* device = [] {
    auto* d = new Device();  // never destroyed: frees may come after static teardown
    void* arena =
        mmap(nullptr, kDeviceBytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (arena == MAP_FAILED) Fail("cannot reserve the emulated device memory");
    d->arena = static_cast<char*>(arena);
    return d;
  }();
  return *device;
}

void Protect(Device& device, int protection) {
  if (device.used > 0 && mprotect(device.arena, device.used, protection) != 0) {
    Fail("mprotect failed");
  }
}

// Whether [ptr, ptr + bytes) lies in one live allocation.
bool Contains(Device& device, const void* ptr, size_t bytes) {
  const char* p = static_cast<const char*>(ptr);
  auto it = device.allocations.upper_bound(p);
  if (it == device.allocations.begin()) return false;
  --it;
  return p >= it->first && p + bytes <= it->first + it->second;
}

thread_local cudaError_t last_error = cudaSuccess;

// Streams by creation, index 0 the legacy default stream (nullptr); never freed, so a stream
// used after cudaStreamDestroy is caught.
struct Streams {
  std::mutex mu;
  std::vector<uint64_t> work{0};
  std::vector<bool> live{true};
};

Streams& TheStreams() {
  static Streams* streams = new Streams();
  return *streams;
}

// Calls that make the host wait for the device (a stream or device synchronisation, a
// synchronous copy, cudaFree) and device allocations, counted for the tests' step budget.
std::atomic<uint64_t> host_waits{0};
std::atomic<uint64_t> device_allocations{0};

std::atomic<int> sticky_error{cudaSuccess};  // transerve_emulator_break_device

// For tests of a whole process (tests/server/device_lost_test.sh): with
// TRANSERVE_CUDA_EMULATOR_BREAK_ON_SIGUSR1 set, SIGUSR1 breaks the device as a kernel's illegal
// address would. (A lock-free atomic store is safe in a signal handler.)
void BreakOnSignal(int) { sticky_error.store(cudaErrorIllegalAddress); }
[[maybe_unused]] const bool kBreakOnSignal = [] {
  if (std::getenv("TRANSERVE_CUDA_EMULATOR_BREAK_ON_SIGUSR1") == nullptr) return false;
  struct sigaction action = {};
  action.sa_handler = BreakOnSignal;
  sigemptyset(&action.sa_mask);
  return sigaction(SIGUSR1, &action, nullptr) == 0;
}();

size_t StreamIndex(cudaStream_t stream) { return reinterpret_cast<uintptr_t>(stream); }

// Whether `stream` exists and was not destroyed; with streams.mu held.
bool IsLive(const Streams& streams, cudaStream_t stream) {
  const size_t index = StreamIndex(stream);
  return index < streams.work.size() && streams.live[index];
}

}  // namespace

void CountWork(cudaStream_t stream) {
  Streams& streams = TheStreams();
  std::lock_guard<std::mutex> lock(streams.mu);
  if (!IsLive(streams, stream))
    Fail("work queued on a stream that does not exist or was destroyed");
  ++streams.work[StreamIndex(stream)];
}

cudaError_t StickyError() { return static_cast<cudaError_t>(sticky_error.load()); }

cudaError_t RecordError(cudaError_t error) {
  if (error != cudaSuccess) last_error = error;
  return error;
}

bool IsDeviceRange(const void* ptr, size_t bytes) {
  Device& device = TheDevice();
  std::lock_guard<std::recursive_mutex> lock(device.mu);
  return Contains(device, ptr, bytes);
}

void RequireDevicePointer(const void* ptr, const char* what) {
  if (ptr != nullptr && !IsDeviceRange(ptr, 1)) {
    std::fprintf(stderr, "CUDA emulator: %s %p is not device memory\n", what, ptr);
    std::abort();
  }
}

DeviceAccess::DeviceAccess() {
  Device& device = TheDevice();
  device.mu.lock();
  if (device.open++ == 0) Protect(device, PROT_READ | PROT_WRITE);
}

DeviceAccess::~DeviceAccess() {
  Device& device = TheDevice();
  if (--device.open == 0) Protect(device, PROT_NONE);
  device.mu.unlock();
}

namespace {

// Checks a copy's ranges against its direction, then performs it with device memory open.
cudaError_t Copy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  if (StickyError() != cudaSuccess) return RecordError(StickyError());
  if (bytes == 0) return cudaSuccess;
  const bool device_dst = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  const bool device_src = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  if (kind == cudaMemcpyHostToHost) return RecordError(cudaErrorInvalidMemcpyDirection);
  if (IsDeviceRange(dst, bytes) != device_dst || IsDeviceRange(src, bytes) != device_src) {
    std::fprintf(stderr,
                 "CUDA emulator: copy of %zu bytes %p -> %p (kind %d) out of bounds or "
                 "in the wrong direction\n",
                 bytes, src, dst, static_cast<int>(kind));
    return RecordError(cudaErrorInvalidValue);
  }
  const DeviceAccess access;
  std::memmove(dst, src, bytes);
  return cudaSuccess;
}

}  // namespace
}  // namespace transerve_cuda_emulator

using transerve_cuda_emulator::RecordError;

cudaError_t cudaGetDeviceCount(int* count) {
  *count = 1;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (device != 0) return RecordError(cudaErrorInvalidValue);
  std::memset(prop, 0, sizeof(*prop));
  std::snprintf(prop->name, sizeof(prop->name), "transerve CUDA emulator (host CPU, no GPU)");
  prop->totalGlobalMem = transerve_cuda_emulator::kDeviceBytes;
  prop->major = 9;
  prop->minor = 0;
  return cudaSuccess;
}

cudaError_t cudaMalloc(void** ptr, size_t bytes) {
  using namespace transerve_cuda_emulator;
  *ptr = nullptr;
  ++device_allocations;
  if (StickyError() != cudaSuccess) return RecordError(StickyError());
  Device& device = TheDevice();
  std::lock_guard<std::recursive_mutex> lock(device.mu);
  if (bytes == 0) return cudaSuccess;
  const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  if (bytes > device.limit || rounded > device.limit - device.used) {
    return RecordError(cudaErrorMemoryAllocation);
  }
  char* data = device.arena + device.used;
  device.used += rounded;
  // Like a GPU's, fresh memory holds garbage (NaN floats, -1 integers), not zeros.
  if (mprotect(device.arena, device.used, PROT_READ | PROT_WRITE) != 0) Fail("mprotect failed");
  std::memset(data, 0xFF, rounded);
  if (device.open == 0) Protect(device, PROT_NONE);
  device.allocations.emplace(data, bytes);
  *ptr = data;
  return cudaSuccess;
}

cudaError_t cudaFree(void* ptr) {
  using namespace transerve_cuda_emulator;
  if (ptr == nullptr) return cudaSuccess;
  ++host_waits;  // cudaFree waits for the device
  Device& device = TheDevice();
  std::lock_guard<std::recursive_mutex> lock(device.mu);
  auto it = device.allocations.find(static_cast<const char*>(ptr));
  if (it == device.allocations.end()) return RecordError(cudaErrorInvalidDevicePointer);
  // Give the whole pages back, so opening and closing the arena does not keep walking them.
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(it->first) + page - 1) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(it->first) + it->second) / page * page;
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
  device.allocations.erase(it);
  return cudaSuccess;
}

// For tests: lets cudaMalloc hand out at most `bytes` more from now on (freed memory is never
// reused here); SIZE_MAX lifts the limit.
extern "C" __attribute__((visibility("default"))) void transerve_emulator_limit_memory(
    size_t bytes) {
  using namespace transerve_cuda_emulator;
  Device& device = TheDevice();
  std::lock_guard<std::recursive_mutex> lock(device.mu);
  device.limit = bytes >= kDeviceBytes - device.used ? kDeviceBytes : device.used + bytes;
}

cudaError_t cudaHostAlloc(void** ptr, size_t bytes, unsigned /*flags*/) {
  *ptr = std::malloc(bytes == 0 ? 1 : bytes);
  return *ptr != nullptr ? cudaSuccess : RecordError(cudaErrorMemoryAllocation);
}

cudaError_t cudaFreeHost(void* ptr) {
  ++transerve_cuda_emulator::host_waits;  // like cudaFree, it waits for the device
  std::free(ptr);
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  ++transerve_cuda_emulator::host_waits;
  return transerve_cuda_emulator::Copy(dst, src, bytes, kind);
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream) {
  transerve_cuda_emulator::CountWork(stream);
  return transerve_cuda_emulator::Copy(dst, src, bytes, kind);
}

cudaError_t cudaMemsetAsync(void* dst, int value, size_t bytes, cudaStream_t stream) {
  using namespace transerve_cuda_emulator;
  CountWork(stream);
  if (StickyError() != cudaSuccess) return RecordError(StickyError());
  if (bytes == 0) return cudaSuccess;
  if (!IsDeviceRange(dst, bytes)) return RecordError(cudaErrorInvalidValue);
  const DeviceAccess access;
  std::memset(dst, value, bytes);
  return cudaSuccess;
}

// A stream is its index in the registry, never 0 (the legacy default stream).
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned) {
  using namespace transerve_cuda_emulator;
  Streams& streams = TheStreams();
  std::lock_guard<std::mutex> lock(streams.mu);
  *stream = reinterpret_cast<cudaStream_t>(static_cast<uintptr_t>(streams.work.size()));
  streams.work.push_back(0);
  streams.live.push_back(true);
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  using namespace transerve_cuda_emulator;
  Streams& streams = TheStreams();
  std::lock_guard<std::mutex> lock(streams.mu);
  if (stream == nullptr || !IsLive(streams, stream)) return RecordError(cudaErrorInvalidValue);
  streams.live[StreamIndex(stream)] = false;
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  using namespace transerve_cuda_emulator;
  ++host_waits;
  Streams& streams = TheStreams();
  std::lock_guard<std::mutex> lock(streams.mu);
  if (!IsLive(streams, stream)) return RecordError(cudaErrorInvalidValue);
  return StickyError() != cudaSuccess ? RecordError(StickyError()) : cudaSuccess;
}

// For tests: how many operations each stream has been given, in creation order (index 0: the
// legacy default stream), destroyed streams included. Writes up to `capacity` counts and
// returns the number of streams.
extern "C" __attribute__((visibility("default"))) int transerve_emulator_stream_work(uint64_t* work,
                                                                                     int capacity) {
  using namespace transerve_cuda_emulator;
  Streams& streams = TheStreams();
  std::lock_guard<std::mutex> lock(streams.mu);
  for (int i = 0; i < capacity && i < static_cast<int>(streams.work.size()); ++i) {
    work[i] = streams.work[i];
  }
  return static_cast<int>(streams.work.size());
}

// For tests: how many times the host has waited for the device, and how many cudaMalloc calls
// were made, since the plugin was loaded.
extern "C" __attribute__((visibility("default"))) uint64_t transerve_emulator_host_waits() {
  return transerve_cuda_emulator::host_waits.load();
}

extern "C" __attribute__((visibility("default"))) uint64_t transerve_emulator_device_allocations() {
  return transerve_cuda_emulator::device_allocations.load();
}

// For tests: breaks the device with a sticky error (cudaErrorIllegalAddress, say), as a kernel
// fault would: from now on every launch, copy, synchronisation, allocation and GEMM fails with
// it. cudaSuccess mends it, which no GPU does, so that later tests in the process can run.
extern "C" __attribute__((visibility("default"))) void transerve_emulator_break_device(int error) {
  transerve_cuda_emulator::sticky_error.store(error);
  if (error == cudaSuccess) transerve_cuda_emulator::last_error = cudaSuccess;
}

// A sticky error is never cleared: every later call reports it again.
cudaError_t cudaGetLastError() {
  const cudaError_t error = transerve_cuda_emulator::last_error;
  transerve_cuda_emulator::last_error = transerve_cuda_emulator::StickyError();
  return error;
}

cudaError_t cudaPeekAtLastError() { return transerve_cuda_emulator::last_error; }

namespace {

struct ErrorText {
  cudaError_t error;
  const char* name;
  const char* text;
};

constexpr ErrorText kErrors[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration",
     "invalid configuration argument"},
    {cudaErrorInvalidDevicePointer, "cudaErrorInvalidDevicePointer", "invalid device pointer"},
    {cudaErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection",
     "invalid copy direction for memcpy"},
    {cudaErrorIllegalAddress, "cudaErrorIllegalAddress",
     "an illegal memory access was encountered"},
};

constexpr ErrorText kUnknownError{cudaErrorInvalidValue, "cudaErrorUnknown", "unknown error"};

const ErrorText& Describe(cudaError_t error) {
  for (const ErrorText& e : kErrors) {
    if (e.error == error) return e;
  }
  return kUnknownError;
}

}  // namespace

const char* cudaGetErrorName(cudaError_t error) { return Describe(error).name; }
const char* cudaGetErrorString(cudaError_t error) { return Describe(error).text; }
