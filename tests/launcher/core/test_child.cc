// A stand-in training process for the multi-process launcher tests. It records the environment
// the launcher gave it, then behaves as told:
//   lockstep_test_child OUTDIR [--sleep S] [--forever] [--fail-rank R --fail-code C]
//                              [--fail-restart N] [--heartbeat-every S] [--no-heartbeat-rank R]
//                              [--term-delay S] [--progress-total N] [--progress-stall-at K]
// Files: OUTDIR/env.<attempt>.<rank> (KEY=VALUE lines of LOCKSTEP_* and the PyTorch variables,
//        written atomically),
//        OUTDIR/term.<attempt>.<rank> when SIGTERM arrives (then exits 143; with --term-delay S
//        it goes on for S seconds, as a trainer finishing its step and checkpoint does, and
//        exits 0).
// With --progress-total N, global rank 0 appends a progress line to LOCKSTEP_PROGRESS_FILE on
// every loop turn (step 1, 2, ..., totalSteps N, samplesPerSecond 64), plus one malformed line
// first, as a trainer's stray output would be. With --progress-stall-at K it stops reporting
// after step K (< N) and lives on, as a trainer stuck mid-training would.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

extern char** environ;

namespace {

std::string g_term_file;
double g_term_delay = 0;
volatile sig_atomic_t g_term_seen = 0;  // SIGTERM arrived (with a --term-delay)

void OnTerm(int) {
  int fd = ::open(g_term_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) ::close(fd);
  if (g_term_delay <= 0) ::_exit(143);
  g_term_seen = 1;
}

std::string Env(const char* name, const char* fallback = "") {
  const char* v = std::getenv(name);
  return v ? v : fallback;
}

// LOCKSTEP_* plus the variables torchrun gives a worker (framework "pytorch").
bool Recorded(const char* entry) {
  static const char* const kPrefixes[] = {
      "LOCKSTEP_", "TORCHELASTIC_", "RANK=", "LOCAL_RANK=", "WORLD_SIZE=", "LOCAL_WORLD_SIZE=",
      "GROUP_RANK=", "GROUP_WORLD_SIZE=", "ROLE_RANK=", "ROLE_WORLD_SIZE=", "ROLE_NAME=",
      "MASTER_ADDR=", "MASTER_PORT="};
  for (const char* p : kPrefixes) {
    if (std::strncmp(entry, p, std::strlen(p)) == 0) return true;
  }
  return false;
}

void Touch(const std::string& path) {
  std::ofstream(path, std::ios::app).flush();
  ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);
}

// One write on an O_APPEND descriptor, as a trainer should append (docs/launcher.md "Progress").
void AppendLine(const std::string& path, const std::string& line) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  const std::string out = line + "\n";
  if (::write(fd, out.data(), out.size()) < 0) std::perror("progress");
  ::close(fd);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 64;
  const std::string dir = argv[1];
  double sleep_s = 0, heartbeat_every = 0;
  bool forever = false;
  long progress_total = 0, progress_stall_at = 0;
  int fail_rank = -1, fail_code = 1, fail_restart = 0, no_heartbeat_rank = -1;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() { return i + 1 < argc ? argv[++i] : "0"; };
    if (a == "--sleep") sleep_s = std::atof(next());
    else if (a == "--forever") forever = true;
    else if (a == "--fail-rank") fail_rank = std::atoi(next());
    else if (a == "--fail-code") fail_code = std::atoi(next());
    else if (a == "--fail-restart") fail_restart = std::atoi(next());
    else if (a == "--heartbeat-every") heartbeat_every = std::atof(next());
    else if (a == "--no-heartbeat-rank") no_heartbeat_rank = std::atoi(next());
    else if (a == "--term-delay") g_term_delay = std::atof(next());
    else if (a == "--progress-total") progress_total = std::atol(next());
    else if (a == "--progress-stall-at") progress_stall_at = std::atol(next());
  }
  const int rank = std::atoi(Env("LOCKSTEP_RANK", "-1").c_str());
  const int restart = std::atoi(Env("LOCKSTEP_RESTART_COUNT", "0").c_str());
  const std::string tag = Env("LOCKSTEP_ATTEMPT", "x") + "." + std::to_string(rank);
  g_term_file = dir + "/term." + tag;
  ::signal(SIGTERM, OnTerm);

  const std::string path = dir + "/env." + tag;
  {
    std::ofstream out(path + ".tmp");
    out << "PID=" << ::getpid() << "\n";
    for (char** e = environ; *e != nullptr; ++e) {
      if (Recorded(*e)) out << *e << "\n";
    }
  }
  std::rename((path + ".tmp").c_str(), path.c_str());

  if (rank == fail_rank && restart == fail_restart) {
    std::fprintf(stderr, "test child rank %d failing with code %d on purpose\n", rank, fail_code);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    return fail_code;
  }
  const std::string heartbeat = Env("LOCKSTEP_HEARTBEAT_FILE");
  const std::string progress = progress_total > 0 && rank == 0 ? Env("LOCKSTEP_PROGRESS_FILE") : "";
  long step = 0;
  if (!progress.empty()) AppendLine(progress, "not a progress report");
  const auto start = std::chrono::steady_clock::now();
  std::optional<std::chrono::steady_clock::time_point> stop_at;
  for (;;) {
    if (g_term_seen != 0 && !stop_at) {
      stop_at = std::chrono::steady_clock::now() +
                std::chrono::milliseconds(static_cast<int>(g_term_delay * 1000));
    }
    if (stop_at && std::chrono::steady_clock::now() >= *stop_at) return 0;
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!forever && elapsed >= sleep_s) return 0;
    if (heartbeat_every > 0 && !heartbeat.empty() && rank != no_heartbeat_rank) Touch(heartbeat);
    const long last_step = progress_stall_at > 0 ? progress_stall_at : progress_total;
    if (!progress.empty() && step < last_step) {
      ++step;
      AppendLine(progress, "{\"step\": " + std::to_string(step) + ", \"totalSteps\": " +
                               std::to_string(progress_total) + ", \"samplesPerSecond\": 64}");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(
        heartbeat_every > 0 ? static_cast<int>(heartbeat_every * 1000) : 50));
  }
}
