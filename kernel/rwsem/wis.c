// SPDX-License-Identifier: GPL-2.0
/*
 * wis.c - page-fault and mmap microbenchmarks in the style of will-it-scale
 * (the BRAVO paper's section 6.2), for the patched kernel's mmap_lock:
 *
 *   page_fault  each thread maps a private anonymous chunk, writes one word
 *               into every page of it (a page fault each: mmap_lock taken
 *               for reading) and unmaps it (for writing); counts pages
 *   mmap        each thread maps and unmaps a chunk without touching it
 *               (mmap_lock for writing twice); counts map+unmap pairs
 *
 *   wis TEST THREADS SECONDS [CHUNK_KIB]
 *
 * Prints one line:
 *   wis: test=page_fault threads=2 ms=2001 ops=123456 ops_per_s=61697
 * and exits 1 on a failed system call or a page that did not keep what
 * was written into it.  Built static, it runs as the only program of a
 * busybox initramfs (scripts/kernel-rwsem.sh).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static int page_fault;
static size_t chunk;
static long page;
static atomic_bool stop;
static atomic_bool failed;

struct worker {
	pthread_t tid;
	unsigned long ops;
};

static void *run(void *arg)
{
	struct worker *w = arg;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		char *p = mmap(NULL, chunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		size_t off;

		if (p == MAP_FAILED) {
			perror("wis: mmap");
			atomic_store(&failed, true);
			break;
		}
		if (page_fault) {
			for (off = 0; off < chunk; off += (size_t)page) {
				p[off] = 1;
				w->ops++;
			}
			/* The pages keep what was written (a fault that lost
			 * one would show here). */
			for (off = 0; off < chunk; off += (size_t)page)
				if (p[off] != 1) {
					fprintf(stderr, "wis: page at offset %zu lost its write\n", off);
					atomic_store(&failed, true);
				}
		} else {
			w->ops++;
		}
		if (munmap(p, chunk) != 0) {
			perror("wis: munmap");
			atomic_store(&failed, true);
			break;
		}
	}
	return NULL;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	struct worker *w;
	unsigned long ops = 0;
	int threads, i;
	double secs, t0, t1;

	if (argc < 4 || (strcmp(argv[1], "page_fault") && strcmp(argv[1], "mmap"))) {
		fprintf(stderr, "usage: wis page_fault|mmap THREADS SECONDS [CHUNK_KIB]\n");
		return 2;
	}
	page_fault = !strcmp(argv[1], "page_fault");
	threads = atoi(argv[2]);
	secs = atof(argv[3]);
	page = sysconf(_SC_PAGESIZE);
	chunk = (size_t)(argc > 4 ? atol(argv[4]) : (page_fault ? 4096 : 131072)) * 1024;
	if (threads < 1 || secs <= 0 || chunk < (size_t)page) {
		fprintf(stderr, "wis: bad arguments\n");
		return 2;
	}
	w = calloc((size_t)threads, sizeof(*w));
	if (!w)
		return 1;
	t0 = now_ms();
	for (i = 0; i < threads; i++)
		if (pthread_create(&w[i].tid, NULL, run, &w[i]) != 0) {
			fprintf(stderr, "wis: pthread_create failed\n");
			return 1;
		}
	usleep((useconds_t)(secs * 1e6));
	atomic_store(&stop, true);
	for (i = 0; i < threads; i++) {
		pthread_join(w[i].tid, NULL);
		ops += w[i].ops;
	}
	t1 = now_ms();
	printf("wis: test=%s threads=%d ms=%.0f ops=%lu ops_per_s=%.0f result=%s\n", argv[1], threads,
	       t1 - t0, ops, ops * 1e3 / (t1 - t0), atomic_load(&failed) ? "FAIL" : "PASS");
	return atomic_load(&failed) ? 1 : 0;
}
