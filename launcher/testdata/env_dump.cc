// Test helper: writes its environment, one NAME=VALUE per line, to DIR/env.<RANK or single>.
#include <cstdio>
#include <cstdlib>
#include <string>

extern char** environ;

int main(int argc, char** argv) {
  if (argc != 2) return 64;
  const char* rank = std::getenv("RANK");
  const std::string path = std::string(argv[1]) + "/env." + (rank != nullptr ? rank : "single");
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return 65;
  for (char** e = environ; *e != nullptr; ++e) std::fprintf(f, "%s\n", *e);
  return std::fclose(f) == 0 ? 0 : 66;
}
