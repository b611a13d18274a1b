// replica_probe: the replica command of the local-backend benchmarks. The first thing it
// does is read CLOCK_MONOTONIC and send "<name> <ns>" in one datagram to the Unix socket
// given as argv[1] (name: $HOSTNAME, which the local backend sets to the pod name), so the
// benchmark learns when the process really started (after fork, exec and dynamic loading).
// Then it waits for a signal (default action: exit), or exits 0 at once with argv[2] "exit".
// No dependencies beyond libc, so its own start-up cost is small and the same for coach and
// for the baseline that starts it directly.

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char** argv) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  if (argc < 2) {
    fprintf(stderr, "usage: replica_probe SOCKET [exit]\n");
    return 2;
  }
  const char* name = getenv("HOSTNAME");
  if (name == NULL) name = "unknown";
  char msg[512];
  const int n =
      snprintf(msg, sizeof(msg), "%s %lld", name, (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
  struct sockaddr_un addr;
  memset(&addr, 0, sizeof(addr));
  addr.sun_family = AF_UNIX;
  strncpy(addr.sun_path, argv[1], sizeof(addr.sun_path) - 1);
  const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || sendto(fd, msg, (size_t)n, 0, (struct sockaddr*)&addr, sizeof(addr)) < 0) {
    perror("replica_probe: send");
    return 1;
  }
  close(fd);
  if (argc > 2 && strcmp(argv[2], "exit") == 0) return 0;
  for (;;) pause();
}
