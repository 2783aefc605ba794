/*
 * fslab-random: study S4's random.c (seeds 001 and 003), a "small database under real load".
 *
 *   fslab-random [--cycles 100] [--tries 100] [--bufsize 16384] [--write-percent 25]
 *                [--seed 1] FILE...
 *
 * Each of `cycles` cycles picks one FILE at random, opens it O_RDWR and does `tries` tries:
 * lseek to a random offset, read `bufsize` bytes; in `write-percent` % of the tries lseek back to
 * that offset, write the buffer and fsync. Then close. Like the articles' listing, except:
 * - Offsets are uniform in [0, size - bufsize], so every read and write is whole. The listing
 *   took `rand() % size`: near the end of a file it read short and then wrote a whole buffer
 *   past the end, so the files grew a little during a run. Files smaller than bufsize are refused.
 * - The random numbers come from splitmix64 seeded with --seed (rand() seeded with time(NULL) in
 *   the listing), so a seed gives the same files, offsets and writes on every machine. The draws
 *   are in the listing's order: file, then per try the offset, then whether to write.
 * - Errors stop the program with exit status 1 and one line on stderr (the listing printed and
 *   went on, or exited 0); bad arguments give exit status 2. It prints no line per cycle (the
 *   listing printed "Trying FILE, size: N"), only the JSON lines below.
 * - The buffer written back carries the try's number in its first 8 bytes (little-endian); the
 *   listing wrote back unchanged what it had just read. The I/O is the same, but a run's effect on
 *   the files becomes checkable: the same seed leaves the same file checksums, another seed not.
 * - The listing's `seek(fd, i, SEEK_SET)` is read as the lseek it must have been.
 * Default bufsize 16384 is "16KB" of seed 001; seed 003's listing has BSIZE 16536, likely a typo,
 * which --bufsize 16536 reproduces.
 *
 * Output: one JSON object a line, {"metric", "value", "unit", "seed", "prng", "bufsize",
 * "write_percent", "tries_per_cycle"}: cycles, tries, reads, writes, fsyncs, bytes_read,
 * bytes_written, elapsed_s (the loop, by CLOCK_MONOTONIC), and file_cycles once per FILE (with
 * "file", its name without the directory). Every value has its unit: a count is in what it
 * counts (cycles, tries, reads, writes, fsyncs), bytes in B, time in s.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_SEED 9007199254740991ULL /* 2^53 - 1: a JSON number stays exact */

static uint64_t rng_state;

static void die(int status, const char *fmt, ...)
{
    va_list ap;
    fputs("fslab-random: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(status);
}

/* splitmix64 (Steele, Lea, Flood 2014): tiny, and the same sequence everywhere. */
static uint64_t next_u64(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Uniform in [0, n), n >= 1, without modulo bias: draws below 2^64 mod n are drawn again. */
static uint64_t below(uint64_t n)
{
    uint64_t threshold = (0 - n) % n, x;
    do {
        x = next_u64();
    } while (x < threshold);
    return x % n;
}

static uint64_t parse_u64(const char *opt, const char *text, uint64_t lo, uint64_t hi)
{
    char *end;
    unsigned long long v;
    if (text == NULL)
        die(2, "%s needs a value", opt);
    errno = 0;
    v = strtoull(text, &end, 10);
    if (text[0] < '0' || text[0] > '9' || *end != '\0' || errno != 0 || v < lo || v > hi)
        die(2, "%s: '%s' is not allowed; allowed: a whole number from %" PRIu64 " to %" PRIu64,
            opt, text, lo, hi);
    return (uint64_t)v;
}

static void io_full(int write_it, int fd, char *buf, size_t n, const char *path, uint64_t off)
{
    size_t done = 0;
    while (done < n) {
        ssize_t r = write_it ? write(fd, buf + done, n - done) : read(fd, buf + done, n - done);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            die(1, "%s %s at offset %" PRIu64 ": %s", write_it ? "write" : "read", path, off,
                strerror(errno));
        if (r == 0)
            die(1, "short read of %s at offset %" PRIu64 ": end of file", path, off);
        done += (size_t)r;
    }
}

static void seek_to(int fd, uint64_t off, const char *path)
{
    if (lseek(fd, (off_t)off, SEEK_SET) < 0)
        die(1, "lseek %s to %" PRIu64 ": %s", path, off, strerror(errno));
}

/* A file name as a JSON string body: quotes, backslashes and control characters escaped. */
static void put_json_string(const char *s)
{
    const char *base = strrchr(s, '/');
    putchar('"');
    for (s = base ? base + 1 : s; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

static uint64_t seed_g, bufsize_g, percent_g, tries_g;

static void metric(const char *name, const char *value, const char *unit, const char *file)
{
    printf("{\"metric\": \"%s\", \"value\": %s, \"unit\": \"%s\", \"seed\": %" PRIu64
           ", \"prng\": \"splitmix64\", \"bufsize\": %" PRIu64 ", \"write_percent\": %" PRIu64
           ", \"tries_per_cycle\": %" PRIu64, name, value, unit, seed_g, bufsize_g, percent_g, tries_g);
    if (file) {
        fputs(", \"file\": ", stdout);
        put_json_string(file);
    }
    puts("}");
}

static void count(const char *name, uint64_t value, const char *unit, const char *file)
{
    char text[32];
    snprintf(text, sizeof text, "%" PRIu64, value);
    metric(name, text, unit, file);
}

int main(int argc, char **argv)
{
    uint64_t cycles = 100, reads = 0, writes = 0, bytes_read = 0, bytes_written = 0;
    uint64_t *file_cycles;
    char **files, *buf, text[64];
    int nfiles = 0, i, options = 1;
    struct timespec t0, t1;

    seed_g = 1, bufsize_g = 16384, percent_g = 25, tries_g = 100;
    files = calloc((size_t)argc, sizeof *files);
    if (files == NULL)
        die(1, "out of memory");
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *eq = strchr(a, '='), *val;
        char opt[32];
        if (!options || a[0] != '-' || strcmp(a, "-") == 0) {
            files[nfiles++] = argv[i];
            continue;
        }
        if (strcmp(a, "--") == 0) {
            options = 0;
            continue;
        }
        snprintf(opt, sizeof opt, "%.*s", eq ? (int)(eq - a) : (int)strlen(a), a);
        val = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (strcmp(opt, "--cycles") == 0)
            cycles = parse_u64(opt, val, 1, 1000000000);
        else if (strcmp(opt, "--tries") == 0)
            tries_g = parse_u64(opt, val, 1, 1000000000);
        else if (strcmp(opt, "--bufsize") == 0)
            bufsize_g = parse_u64(opt, val, 1, 1 << 30);
        else if (strcmp(opt, "--write-percent") == 0)
            percent_g = parse_u64(opt, val, 0, 100);
        else if (strcmp(opt, "--seed") == 0)
            seed_g = parse_u64(opt, val, 0, MAX_SEED);
        else
            die(2, "unknown option '%s'; allowed: --cycles, --tries, --bufsize, --write-percent, --seed", a);
    }
    if (nfiles == 0)
        die(2, "no files given; usage: fslab-random [--cycles N] [--tries N] [--bufsize BYTES] "
               "[--write-percent P] [--seed S] FILE...");
    rng_state = seed_g;
    buf = malloc((size_t)bufsize_g);
    file_cycles = calloc((size_t)nfiles, sizeof *file_cycles);
    if (buf == NULL || file_cycles == NULL)
        die(1, "out of memory for a buffer of %" PRIu64 " bytes", bufsize_g);
    memset(buf, 0, (size_t)bufsize_g);

    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (uint64_t c = 0; c < cycles; c++) {
        int f = (int)below((uint64_t)nfiles), fd;
        const char *path = files[f];
        struct stat st;
        file_cycles[f]++;
        if ((fd = open(path, O_RDWR)) < 0)
            die(1, "cannot open %s: %s", path, strerror(errno));
        if (fstat(fd, &st) < 0)
            die(1, "fstat %s: %s", path, strerror(errno));
        if ((uint64_t)st.st_size < bufsize_g)
            die(1, "%s has %lld bytes, fewer than --bufsize %" PRIu64, path, (long long)st.st_size,
                bufsize_g);
        for (uint64_t t = 0; t < tries_g; t++) {
            uint64_t off = below((uint64_t)st.st_size - bufsize_g + 1);
            seek_to(fd, off, path);
            io_full(0, fd, buf, (size_t)bufsize_g, path, off);
            reads++, bytes_read += bufsize_g;
            if (below(100) < percent_g) {
                uint64_t n = c * tries_g + t; /* the try's number, little-endian, whatever the CPU */
                for (size_t b = 0; b < 8 && b < (size_t)bufsize_g; b++)
                    buf[b] = (char)(n >> (8 * b));
                seek_to(fd, off, path);
                io_full(1, fd, buf, (size_t)bufsize_g, path, off);
                if (fsync(fd) < 0)
                    die(1, "fsync %s: %s", path, strerror(errno));
                writes++, bytes_written += bufsize_g;
            }
        }
        if (close(fd) < 0)
            die(1, "close %s: %s", path, strerror(errno));
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);

    count("cycles", cycles, "cycles", NULL);
    count("tries", cycles * tries_g, "tries", NULL);
    count("reads", reads, "reads", NULL);
    count("writes", writes, "writes", NULL);
    count("fsyncs", writes, "fsyncs", NULL);
    count("bytes_read", bytes_read, "B", NULL);
    count("bytes_written", bytes_written, "B", NULL);
    snprintf(text, sizeof text, "%.6f",
             (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
    metric("elapsed_s", text, "s", NULL);
    for (i = 0; i < nfiles; i++)
        count("file_cycles", file_cycles[i], "cycles", files[i]);
    if (fflush(stdout) != 0 || ferror(stdout))
        die(1, "writing the results: %s", strerror(errno));
    free(buf);
    free(file_cycles);
    free(files);
    return 0;
}
