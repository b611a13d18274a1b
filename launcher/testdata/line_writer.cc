// Test program for coach-launch's output forwarding: writes lines in several write() calls
// each (random cut points, yielding the CPU between them), the way a worker's partial writes
// would reach a shared terminal. Actions run in the order given:
//   --lines N         N lines "<tag> <rank> line <i> <x repeated 20 + i % 50 times> end" on
//                     stdout (tag "out"; i counts on from the previous --lines) ...
//   --stderr-lines N  ... or on stderr (tag "err")
//   --whole-lines N   like --lines, but each line in one write() (for bench/launcher)
//   --long BYTES      one line of BYTES 'L's on stdout
//   --slow TEXT       half of "TEXT <rank>\n", a 300 ms sleep, the other half, on stdout
//   --tail TEXT       "TEXT <rank>" on stdout without a newline
// The rank is $RANK (0 when unset).
#include <sched.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

namespace {

std::mt19937 rng;

void WriteAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0) std::exit(3);
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void WriteWhole(int fd, const std::string& s) { WriteAll(fd, s.data(), s.size()); }

void WriteInPieces(int fd, const std::string& s) {
  const int pieces = 2 + static_cast<int>(rng() % 4);
  size_t off = 0;
  for (int i = 0; i < pieces - 1 && off < s.size(); ++i) {
    const size_t n = 1 + rng() % (s.size() - off);
    WriteAll(fd, s.data() + off, n);
    off += n;
    sched_yield();
  }
  WriteAll(fd, s.data() + off, s.size() - off);
}

}  // namespace

int main(int argc, char** argv) {
  const char* rank_env = std::getenv("RANK");
  const std::string rank = rank_env != nullptr ? rank_env : "0";
  rng.seed(static_cast<unsigned>(std::atoi(rank.c_str()) + 1));
  int counted[2] = {0, 0};  // lines written so far on stdout, stderr
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--lines" || flag == "--stderr-lines" || flag == "--whole-lines") {
      const bool err = flag == "--stderr-lines";
      void (*emit)(int, const std::string&) = flag == "--whole-lines" ? WriteWhole : WriteInPieces;
      const int n = std::atoi(value.c_str());
      for (int l = counted[err]; l < counted[err] + n; ++l) {
        char num[16];
        std::snprintf(num, sizeof(num), "%05d", l);
        emit(err ? 2 : 1, std::string(err ? "err " : "out ") + rank + " line " + num + " " +
                              std::string(20 + l % 50, 'x') + " end\n");
      }
      counted[err] += n;
    } else if (flag == "--long") {
      WriteInPieces(1, std::string(std::strtoul(value.c_str(), nullptr, 10), 'L') + "\n");
    } else if (flag == "--slow") {
      const std::string line = value + " " + rank + "\n";
      WriteAll(1, line.data(), line.size() / 2);
      usleep(300 * 1000);
      WriteAll(1, line.data() + line.size() / 2, line.size() - line.size() / 2);
    } else if (flag == "--tail") {
      const std::string tail = value + " " + rank;
      WriteAll(1, tail.data(), tail.size());
    } else {
      return 2;
    }
  }
  return 0;
}
