// The sandbox ("pause") container of the kubelet nodes' pods (hack/lib/cluster-kubelet.sh): it
// holds the pod's namespaces while the pod lives. No registry is reachable here to pull
// registry.k8s.io/pause, so the cluster builds this one, which does what that one does: sleep
// until told to stop, exit 0 on SIGINT or SIGTERM, and reap any child it inherits as PID 1.
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int sig) {
  (void)sig;
  _exit(0);
}

static void reap(int sig) {
  (void)sig;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
}

int main(void) {
  struct sigaction on_stop = {.sa_handler = stop};
  struct sigaction on_child = {.sa_handler = reap, .sa_flags = SA_NOCLDSTOP | SA_RESTART};
  if (sigaction(SIGINT, &on_stop, NULL) != 0 || sigaction(SIGTERM, &on_stop, NULL) != 0 ||
      sigaction(SIGCHLD, &on_child, NULL) != 0) {
    return 1;
  }
  for (;;) pause();
}
