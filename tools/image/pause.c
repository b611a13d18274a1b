/* The sandbox ("pause") process of a pod on the testenv's real node (tools/testenv/testenv
 * up --real-node): PID 1 of the pod's namespaces. It waits for SIGINT or SIGTERM and exits 0,
 * and reaps every child that is re-parented to it. Built with `gcc -static` and packed as a
 * one-layer OCI image (tools/image/oci_from_dir.py), so containerd never pulls a pause image.
 * The same contract as Kubernetes' build/pause/linux/pause.c, written here from scratch. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_stop(int sig) {
  (void)sig;
  _exit(0);
}

static void on_child(int sig) {
  (void)sig;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "-v") == 0) {
    puts("coach pause 1.0");
    return 0;
  }
  if (getpid() != 1) fputs("pause: warning: not running as PID 1\n", stderr);
  struct sigaction stop = {.sa_handler = on_stop};
  struct sigaction child = {.sa_handler = on_child, .sa_flags = SA_NOCLDSTOP};
  if (sigaction(SIGINT, &stop, NULL) < 0 || sigaction(SIGTERM, &stop, NULL) < 0 ||
      sigaction(SIGCHLD, &child, NULL) < 0) {
    perror("pause: sigaction");
    return 1;
  }
  for (;;) pause();
}
