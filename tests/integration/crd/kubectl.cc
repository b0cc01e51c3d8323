#include "tests/integration/crd/kubectl.h"

#include "tests/testing/random_suffix.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>

namespace lockstep::crdtest {

namespace {

void WriteAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // kubectl closed its stdin; it reports the problem itself
    done += static_cast<size_t>(n);
  }
}

}  // namespace

KubectlResult Kubectl(const std::vector<std::string>& args, const std::string& stdin_data) {
  std::vector<std::string> argv_storage = {"kubectl", "--request-timeout=60s"};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);

  int in_pipe[2], out_pipe[2];
  if (pipe(in_pipe) != 0 || pipe(out_pipe) != 0) return {-1, "pipe failed"};
  const pid_t pid = fork();
  if (pid < 0) return {-1, "fork failed"};
  if (pid == 0) {
    dup2(in_pipe[0], STDIN_FILENO);
    dup2(out_pipe[1], STDOUT_FILENO);
    dup2(out_pipe[1], STDERR_FILENO);
    close(in_pipe[0]);
    close(in_pipe[1]);
    close(out_pipe[0]);
    close(out_pipe[1]);
    execvp("kubectl", argv.data());
    _exit(127);
  }
  close(in_pipe[0]);
  close(out_pipe[1]);
  // kubectl reads all of stdin before writing much, and manifests are small: writing first
  // cannot deadlock on a full output pipe.
  std::signal(SIGPIPE, SIG_IGN);
  WriteAll(in_pipe[1], stdin_data);
  close(in_pipe[1]);
  KubectlResult result;
  char buf[4096];
  while (true) {
    const ssize_t n = read(out_pipe[0], buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    result.output.append(buf, static_cast<size_t>(n));
  }
  close(out_pipe[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

std::string SourcePath(const std::string& relative) {
  return std::string(LOCKSTEP_SOURCE_DIR) + "/" + relative;
}

void InstallCrd() {
  const KubectlResult applied = Kubectl({"apply", "--server-side", "--force-conflicts", "-f",
                                         SourcePath("crds/")});
  ASSERT_TRUE(applied.ok()) << applied.output;
  const KubectlResult established = Kubectl(
      {"wait", "--for=condition=Established", "--timeout=60s", "crd/trainingjobs.lockstep.dev",
       "crd/clustertrainingtemplates.lockstep.dev", "crd/trainingtemplates.lockstep.dev"});
  ASSERT_TRUE(established.ok()) << established.output;
}

TestNamespace::TestNamespace() {
  name_ = "lockstep-crd-" + ::lockstep::testing::RandomSuffix();
  const KubectlResult created = Kubectl({"create", "namespace", name_});
  EXPECT_TRUE(created.ok()) << created.output;
}

TestNamespace::~TestNamespace() {
  // The namespace controller deletes everything inside; nothing needs to wait for it.
  Kubectl({"delete", "namespace", name_, "--wait=false"});
}

}  // namespace lockstep::crdtest
