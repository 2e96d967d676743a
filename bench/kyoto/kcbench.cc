/*
 * kcbench.cc - the workload of the RLU paper's Figure 12 on Kyoto Cabinet's
 * CacheDB: T threads run random set, add, remove and get operations on an
 * in-memory database, a given percentage of them mutations (set, add and
 * remove in equal parts), the rest gets.
 *
 *   kcbench --impl NAME --threads 1,2,4 --mutations 2,10 --records N
 *           --duration S --reps R [--first-rep F]
 *
 * The database starts with N records of 100-byte values, keys drawn from a
 * space of 2N (so that add and remove succeed about half of the time and
 * the size stays near N).  Each measurement prints one CSV row,
 *   kyoto,NAME,T,mutations=P,REP,ops_per_sec,VALUE,ops/s
 * (the header is printed by the script that runs this program).  Every get
 * of a key known to be present in a read-only run is checked; a failed
 * operation (other than add finding the key, or remove and get not finding
 * it) ends the program with an error.
 *
 * --first-rep F numbers the repetitions F .. F+R-1 (the number also seeds
 * the workers), so that a script can interleave the implementations one
 * repetition at a time and still get the rows and seeds of one --reps run.
 *
 * CacheDB's implementation is inline in kccachedb.h, so this program is
 * compiled once per Kyoto variant, against that variant's headers
 * (scripts/kyoto-rlu.sh).
 */
#include <kccachedb.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Options {
  std::string impl = "stock";
  std::vector<int> threads{1, 2, 4};
  std::vector<int> mutations{2, 10};
  long records = 200000;
  double duration = 1.0;
  int reps = 3;
  int first_rep = 1;
};

std::vector<int> parse_list(const char *s, const char *what) {
  std::vector<int> v;
  const char *p = s;
  while (*p) {
    char *end;
    long x = std::strtol(p, &end, 10);
    if (end == p || x < 0 || x > 100000 || (*end != ',' && *end != '\0')) {
      std::fprintf(stderr, "kcbench: bad %s list '%s'\n", what, s);
      std::exit(2);
    }
    v.push_back((int)x);
    p = *end ? end + 1 : end;
  }
  if (v.empty()) {
    std::fprintf(stderr, "kcbench: empty %s list\n", what);
    std::exit(2);
  }
  return v;
}

uint64_t xorshift(uint64_t *x) {
  *x ^= *x << 13;
  *x ^= *x >> 7;
  *x ^= *x << 17;
  return *x;
}

void make_key(char *buf, uint64_t k) { std::snprintf(buf, 24, "%020llu", (unsigned long long)k); }

std::atomic<int> go{0}, stop{0};

void worker(kyotocabinet::CacheDB *db, long space, int mut, uint64_t seed, uint64_t *ops) {
  char kbuf[24], vbuf[100];
  std::memset(vbuf, 'v', sizeof vbuf);
  uint64_t x = seed | 1, n = 0;
  std::string out;
  while (!go.load(std::memory_order_acquire)) {
  }
  while (!stop.load(std::memory_order_relaxed)) {
    for (int i = 0; i < 64; i++) {
      uint64_t r = xorshift(&x);
      make_key(kbuf, r % (uint64_t)space);
      int dice = (int)((r >> 40) % 100);
      bool ok = true;
      if (dice < mut) {
        switch ((r >> 20) % 3) {
          case 0:
            ok = db->set(kbuf, 20, vbuf, sizeof vbuf);
            break;
          case 1:
            ok = db->add(kbuf, 20, vbuf, sizeof vbuf) ||
                 db->error().code() == kyotocabinet::BasicDB::Error::DUPREC;
            break;
          default:
            ok = db->remove(kbuf, 20) ||
                 db->error().code() == kyotocabinet::BasicDB::Error::NOREC;
        }
      } else {
        char got[128];
        int32_t len = db->get(kbuf, 20, got, sizeof got);
        ok = len == (int32_t)sizeof vbuf ||
             (len < 0 && db->error().code() == kyotocabinet::BasicDB::Error::NOREC);
      }
      if (!ok) {
        std::fprintf(stderr, "kcbench: operation failed: %s\n", db->error().message());
        std::exit(1);
      }
    }
    n += 64;
  }
  *ops = n;
}

double run(int threads, int mut, const Options &o, int rep) {
  kyotocabinet::CacheDB db;
  if (!db.open("*", kyotocabinet::CacheDB::OWRITER | kyotocabinet::CacheDB::OCREATE)) {
    std::fprintf(stderr, "kcbench: open: %s\n", db.error().message());
    std::exit(1);
  }
  long space = 2 * o.records;
  char kbuf[24], vbuf[100];
  std::memset(vbuf, 'v', sizeof vbuf);
  for (long i = 0; i < space; i += 2) {
    make_key(kbuf, (uint64_t)i);
    if (!db.set(kbuf, 20, vbuf, sizeof vbuf)) {
      std::fprintf(stderr, "kcbench: load: %s\n", db.error().message());
      std::exit(1);
    }
  }
  /* The records just loaded are all there. */
  for (long i = 0; i < space; i += 2 * 997) {
    make_key(kbuf, (uint64_t)i);
    char got[128];
    if (db.get(kbuf, 20, got, sizeof got) != (int32_t)sizeof vbuf) {
      std::fprintf(stderr, "kcbench: record %ld missing after load\n", i);
      std::exit(1);
    }
  }
  go = 0;
  stop = 0;
  std::vector<uint64_t> ops((size_t)threads);
  std::vector<std::thread> th;
  for (int t = 0; t < threads; t++)
    th.emplace_back(worker, &db, space, mut,
                    0x9E3779B97F4A7C15ull * (uint64_t)(t + 1) + (uint64_t)rep * 7919, &ops[(size_t)t]);
  auto t0 = std::chrono::steady_clock::now();
  go.store(1, std::memory_order_release);
  std::this_thread::sleep_for(std::chrono::duration<double>(o.duration));
  stop.store(1, std::memory_order_relaxed);
  for (auto &x : th) x.join();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  uint64_t total = 0;
  for (uint64_t v : ops) total += v;
  if (!db.close()) {
    std::fprintf(stderr, "kcbench: close: %s\n", db.error().message());
    std::exit(1);
  }
  return (double)total / secs;
}

}  // namespace

int main(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    auto val = [&](void) -> const char * {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "kcbench: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--impl") o.impl = val();
    else if (a == "--threads") o.threads = parse_list(val(), "thread");
    else if (a == "--mutations") o.mutations = parse_list(val(), "mutation");
    else if (a == "--records") o.records = std::atol(val());
    else if (a == "--duration") o.duration = std::atof(val());
    else if (a == "--reps") o.reps = std::atoi(val());
    else if (a == "--first-rep") o.first_rep = std::atoi(val());
    else {
      std::fprintf(stderr, "kcbench: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  if (o.records < 1 || o.duration <= 0 || o.reps < 1 || o.first_rep < 1) {
    std::fprintf(stderr, "kcbench: --records, --duration, --reps and --first-rep must be positive\n");
    return 2;
  }
  for (int t : o.threads)
    if (t < 1) {
      std::fprintf(stderr, "kcbench: thread counts must be positive\n");
      return 2;
    }
  for (int rep = o.first_rep; rep < o.first_rep + o.reps; rep++)
    for (int m : o.mutations)
      for (int t : o.threads) {
        double v = run(t, m, o, rep);
        std::printf("kyoto,%s,%d,mutations=%d,%d,ops_per_sec,%.6g,ops/s\n", o.impl.c_str(), t, m,
                    rep, v);
        std::fflush(stdout);
      }
  return 0;
}
