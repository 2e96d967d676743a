// shared_mutex.cpp - std::shared_mutex (libstdc++ builds it on
// pthread_rwlock_t) under the interposer: readers check that a record
// written by writers is never torn.  With EXPECT_PRELOAD=1 it checks that
// the interposer is loaded and saw this program's lock (its bytes).
#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

static std::shared_mutex mtx;
static long rec[8] = {0, 1, 2, 3, 4, 5, 6, 7};
static std::atomic<bool> stop{false};
static std::atomic<long> torn{0}, reads{0}, writes{0};

int main() {
  alarm(120);
  const char *ep = std::getenv("EXPECT_PRELOAD");
  bool preload = dlsym(RTLD_DEFAULT, "readmostly_preload_active") != nullptr;
  if (ep && std::strcmp(ep, "1") == 0 && !preload) {
    std::fprintf(stderr, "shared_mutex: the interposer is not loaded\n");
    return 1;
  }
  std::vector<std::thread> th;
  for (int r = 0; r < 4; r++)
    th.emplace_back([] {
      while (!stop.load(std::memory_order_relaxed)) {
        std::shared_lock<std::shared_mutex> g(mtx);
        long v = rec[0];
        for (int i = 1; i < 8; i++)
          if (rec[i] != v + i) torn++;
        reads++;
      }
    });
  for (int w = 0; w < 2; w++)
    th.emplace_back([] {
      for (long n = 1; !stop.load(std::memory_order_relaxed); n++) {
        std::unique_lock<std::shared_mutex> g(mtx);
        for (int i = 0; i < 8; i++) rec[i] = -1; // sentinel state
        for (int i = 0; i < 8; i++) rec[i] = n * 100 + i;
        writes++;
      }
    });
  std::this_thread::sleep_for(std::chrono::seconds(2));
  stop = true;
  for (auto &t : th) t.join();
  // Every rec[i] = rec[0] + i again, except the all-zero start.
  std::printf("shared_mutex (%s): %ld reads, %ld writes, %ld torn\n", preload ? "preload" : "glibc",
              reads.load(), writes.load(), torn.load());
  if (torn.load() != 0) return 1;
  if (reads.load() == 0 || writes.load() == 0) return 1;
  const char *impl = std::getenv("READMOSTLY_RWLOCK");
  if (preload && impl && std::strcmp(impl, "prwlock") == 0) {
    // A passive read hold writes nothing into the lock; glibc's would count
    // itself in __readers (offset 0).
    std::shared_lock<std::shared_mutex> g(mtx);
    unsigned char z[4] = {0};
    if (std::memcmp(&mtx, z, sizeof z) != 0) {
      std::fprintf(stderr, "shared_mutex: a read hold shows in glibc's reader count\n");
      return 1;
    }
  } else if (preload) {
    // Our lock leaves its bytes in BRAVO + futexrw form; an unlocked lock
    // that readers used has its bias word set (offset 0) or inhibit time
    // (offset 8) nonzero, which glibc's layout never has there.
    unsigned char z[16] = {0};
    if (std::memcmp(&mtx, z, sizeof z) == 0) {
      std::fprintf(stderr, "shared_mutex: the lock bytes show no BRAVO state\n");
      return 1;
    }
  }
  return 0;
}
