// NCCL all-reduce smoke test run under lockstep-launcher by hack/gpu-check.sh: one process per
// GPU, the communicator bootstrapped from LOCKSTEP_NCCL_UNIQUE_ID (the id node 0's launcher made
// for this attempt), so it proves the launcher's NCCL path end to end. libnccl and libcudart are
// dlopen'ed (no CUDA toolkit needed to build). Prints NCCL's version, then the all-reduce bus
// bandwidth (nccl-tests' definition: algbw * 2 * (n - 1) / n). Built on demand only:
//   g++ -std=c++20 -O2 -o nccl_allreduce_smoke nccl_allreduce_smoke.cc -ldl
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

// The subset of the CUDA runtime and NCCL ABI this program calls (stable C ABIs).
using cudaError_t = int;
using cudaStream_t = void*;
using ncclComm_t = void*;
struct ncclUniqueId {
  char internal[128];
};
constexpr int kNcclFloat32 = 7;  // ncclFloat32 / ncclFloat
constexpr int kNcclSum = 0;
constexpr int kCudaMemcpyHostToDevice = 1;

template <typename Fn>
Fn Sym(void* lib, const char* name) {
  void* p = ::dlsym(lib, name);
  if (p == nullptr) {
    std::fprintf(stderr, "missing symbol %s\n", name);
    std::exit(3);
  }
  return reinterpret_cast<Fn>(p);
}

int EnvInt(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) {
    std::fprintf(stderr, "%s is not set (run under lockstep-launcher)\n", name);
    std::exit(2);
  }
  return std::atoi(v);
}

}  // namespace

int main() {
  const int rank = EnvInt("LOCKSTEP_RANK");
  const int world = EnvInt("LOCKSTEP_WORLD_SIZE");
  const int local_rank = EnvInt("LOCKSTEP_LOCAL_RANK");
  const char* hex = std::getenv("LOCKSTEP_NCCL_UNIQUE_ID");
  if (hex == nullptr || std::strlen(hex) != 256) {
    std::fprintf(stderr, "LOCKSTEP_NCCL_UNIQUE_ID missing: the launcher could not load NCCL\n");
    return 2;
  }
  ncclUniqueId id{};
  for (int i = 0; i < 128; ++i) {
    unsigned byte = 0;
    std::sscanf(hex + 2 * i, "%2x", &byte);
    id.internal[i] = static_cast<char>(byte);
  }
  const char* nccl_path = std::getenv("LOCKSTEP_NCCL_LIBRARY");
  void* nccl = ::dlopen(nccl_path ? nccl_path : "libnccl.so.2", RTLD_NOW);
  void* cudart = ::dlopen("libcudart.so.13", RTLD_NOW);
  if (cudart == nullptr) cudart = ::dlopen("libcudart.so.12", RTLD_NOW);
  if (cudart == nullptr) cudart = ::dlopen("libcudart.so", RTLD_NOW);
  if (nccl == nullptr || cudart == nullptr) {
    std::fprintf(stderr, "dlopen failed: %s\n", ::dlerror());
    return 3;
  }
  auto cudaSetDevice = Sym<cudaError_t (*)(int)>(cudart, "cudaSetDevice");
  auto cudaMalloc = Sym<cudaError_t (*)(void**, size_t)>(cudart, "cudaMalloc");
  auto cudaMemcpy = Sym<cudaError_t (*)(void*, const void*, size_t, int)>(cudart, "cudaMemcpy");
  auto cudaStreamCreate = Sym<cudaError_t (*)(cudaStream_t*)>(cudart, "cudaStreamCreate");
  auto cudaStreamSynchronize = Sym<cudaError_t (*)(cudaStream_t)>(cudart, "cudaStreamSynchronize");
  auto ncclGetVersion = Sym<int (*)(int*)>(nccl, "ncclGetVersion");
  auto ncclCommInitRank =
      Sym<int (*)(ncclComm_t*, int, ncclUniqueId, int)>(nccl, "ncclCommInitRank");
  auto ncclAllReduce = Sym<int (*)(const void*, void*, size_t, int, int, ncclComm_t, cudaStream_t)>(
      nccl, "ncclAllReduce");
  auto ncclCommDestroy = Sym<int (*)(ncclComm_t)>(nccl, "ncclCommDestroy");

  int version = 0;
  ncclGetVersion(&version);
  if (cudaSetDevice(local_rank) != 0) {
    std::fprintf(stderr, "cudaSetDevice(%d) failed\n", local_rank);
    return 4;
  }
  ncclComm_t comm = nullptr;
  const auto init_start = std::chrono::steady_clock::now();
  if (int rc = ncclCommInitRank(&comm, world, id, rank); rc != 0) {
    std::fprintf(stderr, "ncclCommInitRank failed: %d\n", rc);
    return 5;
  }
  const double init_ms = std::chrono::duration<double, std::milli>(
                             std::chrono::steady_clock::now() - init_start).count();
  const size_t count = 64u << 20;  // 64 Mi floats = 256 MiB
  void* buf = nullptr;
  if (cudaMalloc(&buf, count * sizeof(float)) != 0) return 6;
  float* host = new float[count];
  for (size_t i = 0; i < count; ++i) host[i] = 1.0f;
  cudaMemcpy(buf, host, count * sizeof(float), kCudaMemcpyHostToDevice);
  cudaStream_t stream = nullptr;
  cudaStreamCreate(&stream);
  ncclAllReduce(buf, buf, count, kNcclFloat32, kNcclSum, comm, stream);  // warm-up
  cudaStreamSynchronize(stream);
  const int iters = 20;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) {
    ncclAllReduce(buf, buf, count, kNcclFloat32, kNcclSum, comm, stream);
  }
  if (cudaStreamSynchronize(stream) != 0) return 7;
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / iters;
  const double bytes = static_cast<double>(count * sizeof(float));
  const double algbw = bytes / secs / 1e9;
  const double busbw = algbw * 2.0 * (world - 1) / world;
  if (rank == 0) {
    std::printf("nccl version %d.%d.%d, world %d, comm init %.1f ms, all-reduce 256 MiB: "
                "%.3f ms, algbw %.1f GB/s, busbw %.1f GB/s%s\n",
                version / 10000, (version % 10000) / 100, version % 100, world, init_ms,
                secs * 1000, algbw, busbw, world == 1 ? " (1 rank: no traffic, busbw 0)" : "");
  }
  ncclCommDestroy(comm);
  delete[] host;
  return 0;
}
