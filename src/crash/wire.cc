// Byte encoding and framed messages between campaign processes (wire.h).
#include "wire.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace ferrite::crash::wire {

void put(Writer& w, const std::vector<HistoryOp>& ops) {
  w.u64(ops.size());
  for (const auto& h : ops) {
    w.i64(h.tid);
    w.u64(h.seq);
    w.i64(h.op.kind);
    w.i64(h.op.arg);
    w.i64(h.op.arg2);
    w.u64(h.invoke);
    w.u64(h.respond);
    w.u64(h.response.has_value ? 1 : 0);
    w.i64(h.response.value);
  }
}

std::vector<HistoryOp> get_history(Reader& r) {
  const auto n = r.u64();
  std::vector<HistoryOp> ops;
  if (!r.ok() || n > (1u << 28)) return ops;
  ops.resize(n);
  for (auto& h : ops) {
    h.tid = static_cast<int>(r.i64());
    h.seq = r.u64();
    h.op.kind = static_cast<decltype(h.op.kind)>(r.i64());
    h.op.arg = r.i64();
    h.op.arg2 = r.i64();
    h.invoke = r.u64();
    h.respond = r.u64();
    h.response.has_value = r.u64() != 0;
    h.response.value = r.i64();
  }
  return ops;
}

void put(Writer& w, const CheckResult& c) {
  w.u64(static_cast<std::uint64_t>(c.verdict));
  w.str(c.property);
  w.str(c.engine);
  w.str(c.reason);
  w.u64(c.nodes);
}

CheckResult get_check(Reader& r) {
  CheckResult c;
  const auto v = r.u64();
  c.verdict = v <= 2 ? static_cast<CheckResult::Verdict>(v) : CheckResult::Verdict::kViolation;
  c.property = r.str();
  c.engine = r.str();
  c.reason = r.str();
  c.nodes = r.u64();
  return c;
}

bool write_all(int fd, const void* p, std::size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t w = ::send(fd, c, n, MSG_NOSIGNAL);
    if (w < 0 && errno == ENOTSOCK) {
      const ssize_t w2 = ::write(fd, c, n);
      if (w2 < 0 && errno == EINTR) continue;
      if (w2 <= 0) return false;
      c += w2;
      n -= static_cast<std::size_t>(w2);
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    c += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

namespace {
// A message header for the 8-byte length word, with room for one passed
// descriptor.
struct LengthWord {
  explicit LengthWord(std::uint64_t* len) : iov{len, sizeof *len} {
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = ctl;
    m.msg_controllen = sizeof ctl;
  }
  LengthWord(const LengthWord&) = delete;
  LengthWord& operator=(const LengthWord&) = delete;
  iovec iov;
  alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int))] = {};
  msghdr m{};
};
}  // namespace

bool send_msg(int sock, const std::string& payload, int fd) {
  const std::uint64_t len = payload.size();
  if (fd >= 0) {
    // The descriptor rides on the length word.
    LengthWord w(const_cast<std::uint64_t*>(&len));
    msghdr& m = w.m;
    cmsghdr* c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
    ssize_t n;
    while ((n = ::sendmsg(sock, &m, MSG_NOSIGNAL)) < 0 && errno == EINTR) {
    }
    if (n != static_cast<ssize_t>(sizeof len)) return false;
  } else if (!write_all(sock, &len, sizeof len)) {
    return false;
  }
  return write_all(sock, payload.data(), payload.size());
}

namespace {
bool read_exact(int fd, void* p, std::size_t n) {
  char* c = static_cast<char*>(p);
  while (n > 0) {
    const ssize_t r = ::read(fd, c, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    c += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}
}  // namespace

bool recv_msg(int sock, std::string& payload, int* fd) {
  if (fd != nullptr) *fd = -1;
  std::uint64_t len = 0;
  LengthWord w(&len);
  msghdr& m = w.m;
  ssize_t n;
  while ((n = ::recvmsg(sock, &m, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR) {
  }
  if (n <= 0) return false;
  for (cmsghdr* c = CMSG_FIRSTHDR(&m); c != nullptr; c = CMSG_NXTHDR(&m, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      int got = -1;
      std::memcpy(&got, CMSG_DATA(c), sizeof got);
      if (fd != nullptr) *fd = got;
      else ::close(got);
    }
  }
  if (n < static_cast<ssize_t>(sizeof len) &&
      !read_exact(sock, reinterpret_cast<char*>(&len) + n, sizeof len - static_cast<std::size_t>(n)))
    return false;
  if (len > (std::uint64_t{1} << 30)) return false;  // garbled
  payload.resize(len);
  return read_exact(sock, payload.data(), len);
}

std::string read_all(int fd) {
  std::string out;
  char buf[1 << 14];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

int wait_child(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

void arm_alarm(double seconds, double cpu_seconds) {
  auto timer = [](double sec) {
    itimerval t{};
    if (sec > 0) {
      const auto us = static_cast<long long>(sec * 1e6);
      t.it_value.tv_sec = static_cast<time_t>(us / 1000000);
      t.it_value.tv_usec = static_cast<suseconds_t>(us % 1000000);
      if (t.it_value.tv_sec == 0 && t.it_value.tv_usec == 0) t.it_value.tv_usec = 1;
    }
    return t;
  };
  const itimerval wall = timer(seconds), cpu = timer(cpu_seconds);
  ::setitimer(ITIMER_REAL, &wall, nullptr);
  ::setitimer(ITIMER_PROF, &cpu, nullptr);  // (SIGPROF's default action ends the process, as SIGALRM's)
}

std::string describe_status(int status, double timeout_s, double cpu_s) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    if (sig == SIGALRM || sig == SIGPROF) {
      char s[32];
      std::snprintf(s, sizeof s, "%g", sig == SIGALRM ? timeout_s : cpu_s);
      return sig == SIGALRM ? "hung (no answer within " + std::string(s) + " s)"
                            : "hung (no answer after " + std::string(s) + " s of CPU time)";
    }
    return std::string("crashed: ") + strsignal(sig);
  }
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  return "ended with wait status " + std::to_string(status);
}

}  // namespace ferrite::crash::wire
