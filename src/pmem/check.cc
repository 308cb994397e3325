// src/pmem/check.cc — check_pool: validates a pool file without writing it
// (for `ferrite check` and `ferrite info`): the header and chunk map from
// pread copies, and, deep, every root's structure through its recovery hook
// on a private mapping at the base.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <utility>

#include "internal.h"

namespace ferrite::pmem {

namespace L = layout;
using detail::fail;

namespace {

std::string one_line(std::string t) {
  for (char& c : t)
    if (c == '\n') c = ' ';
  return t;
}

// Child: open privately, recover, write the findings as lines
// ("N count", "D damaged", "U unknown", "S skipped") to fd.
[[noreturn]] void deep_child(const std::string& path, int fd) {
  std::string out;
  try {
    PoolOptions o;
    o.check_only = true;
    auto pool = Pool::open(path, o);
    const RecoveryReport& r = *pool->recovery_report();
    out += "N " + std::to_string(r.roots_traced) + "\n";
    for (const auto& d : r.failed_roots) out += "D " + one_line(d) + "\n";
    for (const auto& u : r.unknown_roots) out += "U " + one_line(u) + "\n";
    for (const auto& u : r.root_use)
      out += "R " + std::to_string(u.blocks) + " " + std::to_string(u.bytes) + " " + one_line(u.name) + "\n";
  } catch (const std::exception& e) {
    out += "S " + one_line(e.what()) + "\n";
  }
  const char* p = out.data();
  std::size_t n = out.size();
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w <= 0) break;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  ::_exit(0);
}

void deep_check(const std::string& path, CheckReport& rep) {
  constexpr int kLimitS = 120;  // a recovery that takes longer is reported, not waited for
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    rep.deep_skipped = std::string("pipe failed: ") + std::strerror(errno);
    return;
  }
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    rep.deep_skipped = std::string("fork failed: ") + std::strerror(errno);
    ::close(fds[0]);
    ::close(fds[1]);
    return;
  }
  if (pid == 0) {
    ::close(fds[0]);
    ::alarm(kLimitS);
    deep_child(path, fds[1]);
  }
  ::close(fds[1]);
  std::string in;
  char buf[4096];
  for (;;) {
    const ssize_t r = ::read(fds[0], buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    in.append(buf, static_cast<std::size_t>(r));
  }
  ::close(fds[0]);
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(st)) {
    rep.deep_ran = true;
    rep.damaged_roots.push_back(
        WTERMSIG(st) == SIGALRM
            ? "(unknown): a structure's recovery did not finish in " + std::to_string(kLimitS) + " s (a loop in a damaged structure?)"
            : std::string("(unknown): a structure's recovery crashed on this pool (") + strsignal(WTERMSIG(st)) +
                  "): it is damaged, and that structure's hook does not validate what it follows yet");
    return;
  }
  std::size_t at = 0;
  while (at < in.size()) {
    const std::size_t e = in.find('\n', at);
    const std::string line = in.substr(at, e == std::string::npos ? std::string::npos : e - at);
    at = e == std::string::npos ? in.size() : e + 1;
    if (line.size() < 2) continue;
    const std::string v = line.substr(2);
    switch (line[0]) {
      case 'N': rep.deep_ran = true; rep.roots_checked = std::stoull(v); break;
      case 'D': rep.damaged_roots.push_back(v); break;
      case 'U': rep.unknown_roots.push_back(v); break;
      case 'S': rep.deep_skipped = v; break;
      case 'R': {  // "blocks bytes name" (the name last: it may hold spaces)
        RootUse u;
        std::size_t p1 = 0, p2 = 0;
        try {
          u.blocks = std::stoull(v, &p1);
          u.bytes = std::stoull(v.substr(p1), &p2);
        } catch (const std::exception&) {
          break;  // a line this parent cannot read: no statistics for it
        }
        const std::size_t name_at = p1 + p2 + 1;
        if (name_at > v.size()) break;
        u.name = v.substr(name_at);
        rep.root_use.push_back(std::move(u));
        break;
      }
    }
  }
}

}  // namespace

CheckReport check_pool(const std::string& path, bool deep) {
  CheckReport rep;
  int fd = -1;
  try {
    // O_NONBLOCK: a FIFO (or a device) must not block the check; load_and_validate
    // then refuses anything that is not a regular file.
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
      const int e = errno;
      if (e == ENOENT) fail(Errc::kNotFound, path, "no such file");
      fail(Errc::kUnreadable, path, std::string("cannot open: ") + std::strerror(e));
    }
    detail::FileState fs = detail::load_and_validate(fd, path);
    const L::HeaderSlot& h = fs.hdr;
    rep.format_version = h.format_version;
    rep.size = h.pool_size;
    rep.base = h.base;
    rep.generation = h.generation;
    rep.uuid = detail::uuid_text(h.uuid);
    rep.header_slot = fs.slot;
    rep.other_slot_valid = fs.other_valid;
    rep.header = fs.health;
    rep.media = detail::probe_media(fd);
    for (const auto& r : h.roots) {
      if (!r.in_use) continue;
      rep.roots.push_back(RootInfo{r.name, r.offset, r.type_tag, r.type_version, r.size});
      rep.root_type_names.emplace_back(r.type_name);
    }
    const auto orphan = detail::orphan_tails(fs.map);
    rep.chunks_total = h.chunk_count;
    for (std::size_t i = 0; i < fs.map.size(); ++i)
      rep.chunks_used += (fs.map[i] != L::kChunkFree && !orphan[i]) ? 1 : 0;
    rep.ok = true;
  } catch (const PoolError& e) {
    rep.ok = false;
    rep.error = e.code();
    rep.message = e.what();
    deep = false;
  } catch (const std::exception& e) {
    rep.ok = false;
    rep.error = Errc::kUnreadable;
    rep.message = "pool " + path + ": " + e.what();
    deep = false;
  }
  if (fd >= 0) ::close(fd);
  if (!deep) return rep;
  // The deep check: every root's structure, through its recovery hook, on a
  // private copy-on-write mapping (PoolOptions::check_only): nothing is
  // written to the file. It runs in a child process, so a hook that is not
  // yet validating and meets damage it does not expect (a signal) or loops
  // (a time limit) is reported as a damaged pool, never as a crash or a
  // hang of the caller.
  deep_check(path, rep);
  return rep;
}

}  // namespace ferrite::pmem
