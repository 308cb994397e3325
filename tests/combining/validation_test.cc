// Issue 40, "Open never segfaults on a damaged pool", for the combining
// family (combining/validate.h): every structure is created in a pool file
// and used, then specific words are damaged THROUGH THE FILE (a StateRec
// pointer, a top/Head pointer in a resealed record, a next pointer, a
// flipped bit in a node pointer, a cycle, a count, a StateRec index), the
// pool is re-opened in a child process (fork: a signal there is a failed
// test, not a dead test binary; alarm: an endless loop is a signal too)
// that attaches and runs operations; the child must end with
// PoolError(kCorrupt) — from open's recovery (the root left closed) or
// attach — never a signal. Then a sweep flips one bit of each byte of the
// root object, of the current StateRec's head and of two nodes, and asserts
// the child always exits normally (kCorrupt, or a clean run when the byte
// is not read). Bounded: about 1.5k children, scaled (tests/common/scale.h).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "common/scale.h"
#include "common/temp_pool.h"
#include "ferrite/combining/atomic_float.h"
#include "ferrite/combining/pb_bytes_queue.h"
#include "ferrite/combining/pb_bytes_stack.h"
#include "ferrite/combining/pb_heap.h"
#include "ferrite/combining/pb_queue.h"
#include "ferrite/combining/pb_stack.h"
#include "ferrite/combining/pwf_atomic_float.h"
#include "ferrite/combining/pwf_heap.h"
#include "ferrite/combining/pwf_queue.h"
#include "ferrite/combining/pwf_stack.h"
#include "ferrite/detectable.h"
#include "ferrite/pmem/pool.h"

namespace combining_validation_test {  // this file's names, apart in a unity build

namespace fc = ferrite::combining;
namespace pm = ferrite::pmem;

namespace {

constexpr std::size_t kPoolBytes = std::size_t{2} << 20;
// Child exit codes.
constexpr int kClean = 0, kCorrupt = 3, kOtherPoolError = 4, kOtherException = 5;

// A pool file as the structure left it, and the damage to try on it.
struct Image {
  ferrite::test::TempPath path{"validate"};
  std::string bytes;  // the whole file
  std::uint64_t base = 0;

  void load() {
    std::ifstream f(path.path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    bytes = ss.str();
  }
  std::uint64_t word(std::uint64_t off) const {
    std::uint64_t w;
    std::memcpy(&w, bytes.data() + off, 8);
    return w;
  }
};

struct Edit {
  std::uint64_t off;
  std::uint64_t value;  // the new 8-byte word (or byte, with width 1)
  int width = 8;
};

// The child's outcome: its exit code, or -signal.
int run_damaged(const Image& img, const std::vector<Edit>& edits, const std::function<void(pm::Pool&)>& use,
                std::string* why = nullptr, const std::function<void(std::string&)>& reseal = {}) {
  std::string b = img.bytes;
  for (const Edit& e : edits) std::memcpy(b.data() + e.off, &e.value, static_cast<std::size_t>(e.width));
  if (reseal) reseal(b);
  {
    const int fd = ::open(img.path.path.c_str(), O_WRONLY | O_TRUNC);
    if (fd < 0 || ::write(fd, b.data(), b.size()) != static_cast<ssize_t>(b.size())) return -1000;
    ::close(fd);
  }
  int fds[2];
  if (::pipe(fds) != 0) return -1001;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    ::alarm(20);  // an endless loop ends as SIGALRM: a failure
    int code = kClean;
    std::string msg;
    try {
      auto pool = pm::Pool::open(img.path.path);
      use(*pool);
    } catch (const pm::PoolError& e) {
      code = e.code() == pm::Errc::kCorrupt ? kCorrupt : kOtherPoolError;
      msg = e.what();
    } catch (const std::exception& e) {
      code = kOtherException;
      msg = e.what();
    }
    (void)!::write(fds[1], msg.data(), msg.size());
    ::_exit(code);
  }
  ::close(fds[1]);
  std::string msg;
  char buf[512];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0) msg.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int st = 0;
  ::waitpid(pid, &st, 0);
  if (why != nullptr) *why = msg;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
}

// One structure under test: how to build it, what to run after the reopen,
// where its words are (offsets filled by build).
std::uint64_t off_of(const pm::Pool& p, const void* q) { return p.offset_of(q); }

// A PBcomb record's checksum recomputed in the image (a damaged word that
// still verifies: what the structure-level checks must catch).
std::function<void(std::string&)> reseal_pb(std::uint64_t rec_off, const fc::RecLayout& l) {
  return [rec_off, l](std::string& b) {
    char* rec = b.data() + rec_off;
    auto* w = reinterpret_cast<std::uint64_t*>(rec);
    w[1] = fc::rec_checksum(rec, w[0], l);
  };
}

fc::RecLayout layout_of(const fc::PBCombRoot& r) {
  return fc::RecLayout{static_cast<int>(r.threads), static_cast<fc::TagKind>(r.tag_kind), r.state_bytes};
}
// The current record's offset and its state's.
std::pair<std::uint64_t, std::uint64_t> current_pb(const pm::Pool& p, const fc::PBCombRoot& r) {
  const char* st = static_cast<const char*>(fc::pbcomb_current_state(r));
  return {off_of(p, st - layout_of(r).state_off()), off_of(p, st)};
}

void expect_corrupt(const Image& img, const std::vector<Edit>& e, const std::function<void(pm::Pool&)>& use,
                    const char* what, const std::function<void(std::string&)>& reseal = {}) {
  std::string why;
  const int rc = run_damaged(img, e, use, &why, reseal);
  EXPECT_EQ(rc, kCorrupt) << what << ": child " << (rc < 0 ? "died of signal " + std::to_string(-rc) : "exited " + std::to_string(rc))
                          << " (" << why << ")";
  if (rc == kCorrupt) {
    EXPECT_NE(why.find("offset"), std::string::npos) << what << ": the message names no offset: " << why;
  }
}

// Sweep: one bit of each byte of each range; every child must exit normally.
void sweep(const Image& img, const std::vector<std::pair<std::uint64_t, std::size_t>>& ranges,
           const std::function<void(pm::Pool&)>& use, const char* what, int* children) {
  // Every byte at full scale; every 7th under sanitizers (scale 0.1).
  const std::size_t step = ferrite::test::scale() < 0.5 ? 7 : 1;
  for (const auto& [off, len] : ranges)
    for (std::size_t i = 0; i < len; i += step) {
      const std::uint64_t at = off + i;
      const std::uint64_t byte =
          static_cast<std::uint8_t>(static_cast<std::uint8_t>(img.bytes[at]) ^ (1u << ((at * 5) % 8)));
      std::string why;
      const int rc = run_damaged(img, {Edit{at, byte, 1}}, use, &why);
      ++*children;
      EXPECT_GE(rc, 0) << what << ": flipping a bit of the byte at offset " << at << " killed the child (signal "
                       << -rc << ")";
      if (rc < 0) return;
    }
}

template <class F>
void bounded(int n, const F& f) {
  for (int i = 0; i < n && f(); ++i) {
  }
}

// ------------------------------------------------------------- PBStack
TEST(CombiningValidation, PBStack) {
  Image img;
  std::uint64_t rec0_at = 0, rec_off = 0, top_at = 0, n1_next = 0, n2 = 0, n3_next = 0, n1 = 0, root_at = 0;
  fc::RecLayout l{1, fc::TagKind::kBit, 16};
  {
    auto p = pm::Pool::create(img.path.path, kPoolBytes);
    auto s = fc::PBStack<>::create(*p, "s", 2);
    for (int i = 1; i <= 5; ++i) s->push(0, i);  // 4 nodes + the cached value
    auto* r = s->root();
    root_at = off_of(*p, r);
    rec0_at = off_of(*p, &r->comb.rec[0]);
    l = layout_of(r->comb);
    std::tie(rec_off, top_at) = current_pb(*p, r->comb);
    const auto* a = s->top();
    n1 = off_of(*p, a);
    n1_next = off_of(*p, &a->next);
    n2 = off_of(*p, a->next);
    n3_next = off_of(*p, &a->next->next->next);  // the third node's next
  }
  img.load();
  auto use = [](pm::Pool& p) {
    auto s = fc::PBStack<>::attach(p, "s", 2);
    bounded(64, [&] { return s->pop(0).has_value(); });
    s->push(1, 7);
  };
  ASSERT_EQ(run_damaged(img, {}, use), kClean);
  const std::uint64_t base = img.word(n1_next) - n2 + 0;  // the pool's base address (n1->next = base + n2)
  expect_corrupt(img, {{rec0_at, 0x10}}, use, "StateRec pointer outside the pool");
  expect_corrupt(img, {{rec0_at, img.word(rec0_at) + 8}}, use, "StateRec pointer inside a block");
  expect_corrupt(img, {{top_at, base + kPoolBytes + 4096}}, use, "top outside the pool (record resealed)",
                 reseal_pb(rec_off, l));
  expect_corrupt(img, {{top_at, base + root_at}}, use, "top names the root, no node block (resealed)",
                 reseal_pb(rec_off, l));
  expect_corrupt(img, {{n1_next, img.word(n1_next) + 1}}, use, "a misaligned next pointer");
  expect_corrupt(img, {{n1_next, img.word(n1_next) ^ 8}}, use, "a flipped bit (3) in a node pointer");
  expect_corrupt(img, {{n1_next, img.word(n1_next) ^ (std::uint64_t{1} << 44)}}, use, "a flipped bit (44)");
  expect_corrupt(img, {{n3_next, base + n1}}, use, "a cycle");
  // Both records damaged (the current one's top, the other's first bits
  // word): neither verifies.
  expect_corrupt(img, {{top_at, 0x1}}, use, "both StateRecs fail their checksums", [&](std::string& b) {
    const std::uint64_t other =
        img.word(rec0_at) - base == rec_off ? img.word(rec0_at + 8) - base : img.word(rec0_at) - base;
    b[other + 16] ^= 1;
  });
  int children = 0;
  sweep(img, {{root_at, 48}, {rec_off, 64}, {n1, 16}, {n2, 16}}, use, "PBStack", &children);
  std::printf("[validation] PBStack: %d sweep children\n", children);
}

// ------------------------------------------------------------- PBQueue
TEST(CombiningValidation, PBQueue) {
  Image img;
  std::uint64_t recd_at = 0, root_at = 0, n1 = 0, n1_next = 0, n2 = 0, last_next = 0, deq_rec = 0;
  {
    auto p = pm::Pool::create(img.path.path, kPoolBytes);
    auto q = fc::PBQueue<>::create(*p, "q", 2);
    for (int i = 1; i <= 5; ++i) q->enqueue(0, i);
    (void)q->dequeue(1);
    auto* r = q->root();
    root_at = off_of(*p, r);
    recd_at = off_of(*p, &r->deq.rec[1]);
    deq_rec = current_pb(*p, r->deq).first;
    const auto* h = q->head();
    n1 = off_of(*p, h);
    n1_next = off_of(*p, &h->next);
    n2 = off_of(*p, h->next.load());
    last_next = off_of(*p, &q->tail()->next);
  }
  img.load();
  auto use = [](pm::Pool& p) {
    auto q = fc::PBQueue<>::attach(p, "q", 2);
    bounded(64, [&] { return q->dequeue(0).has_value(); });
    q->enqueue(1, 9);
  };
  ASSERT_EQ(run_damaged(img, {}, use), kClean);
  const std::uint64_t base = img.word(n1_next) - n2;
  expect_corrupt(img, {{recd_at, base + kPoolBytes}}, use, "DState record pointer past the pool");
  expect_corrupt(img, {{n1_next, img.word(n1_next) ^ 8}}, use, "a flipped bit in Head's next");
  expect_corrupt(img, {{n1_next, 0}}, use, "the list ends before Tail");
  expect_corrupt(img, {{n1_next, base + n1}}, use, "a cycle from Head");
  (void)last_next;
  int children = 0;
  sweep(img, {{root_at, 48}, {root_at + 128, 48}, {deq_rec, 64}, {n1, 16}}, use, "PBQueue", &children);
  std::printf("[validation] PBQueue: %d sweep children\n", children);
}

// ------------------------------------------------------------- PBHeap, PBAtomicFloat
TEST(CombiningValidation, PBHeapAndPBAtomicFloat) {
  Image img;
  std::uint64_t cap_at = 0, rec_off = 0, st_off = 0, hroot = 0, frec_at = 0, froot = 0;
  fc::RecLayout l{1, fc::TagKind::kBit, 16};
  {
    auto p = pm::Pool::create(img.path.path, kPoolBytes);
    auto h = fc::PBHeap<>::create(*p, "h", 2, 64);
    for (int i = 10; i > 0; --i) h->insert(0, i);
    auto* r = p->root<fc::PBHeapRoot>("h");
    hroot = off_of(*p, r);
    cap_at = off_of(*p, &r->capacity);
    l = layout_of(r->comb);
    std::tie(rec_off, st_off) = current_pb(*p, r->comb);
    auto f = fc::PBAtomicFloat<>::create(*p, "f", 2);
    f->mul(0, 1, 2.0);
    auto* fr = p->root<fc::PBAtomicFloatRoot>("f");
    froot = off_of(*p, fr);
    frec_at = off_of(*p, &fr->comb.rec[1]);
  }
  img.load();
  auto use_h = [](pm::Pool& p) {
    auto h = fc::PBHeap<>::attach(p, "h", 2);
    bounded(80, [&] { return h->delete_min(0).has_value(); });
    h->insert(1, 3);
  };
  auto use_f = [](pm::Pool& p) {
    auto f = fc::PBAtomicFloat<>::attach(p, "f", 2);
    f->mul(1, 1, 3.0);
  };
  ASSERT_EQ(run_damaged(img, {}, use_h), kClean);
  ASSERT_EQ(run_damaged(img, {}, use_f), kClean);
  expect_corrupt(img, {{cap_at, 5000}}, use_h, "PBHeap capacity");
  expect_corrupt(img, {{st_off, 65}}, use_h, "PBHeap size > capacity (resealed)", reseal_pb(rec_off, l));
  expect_corrupt(img, {{frec_at, img.word(frec_at) ^ (std::uint64_t{1} << 40)}}, use_f,
                 "PBAtomicFloat record pointer, bit 40");
  expect_corrupt(img, {{froot + 24, 1u << 30, 4}}, use_f, "PBAtomicFloat thread capacity");
  expect_corrupt(img, {{froot + 16, std::uint64_t{1} << 40}}, use_f, "PBAtomicFloat record size");
  int children = 0;
  sweep(img, {{hroot, 48}, {hroot + 128, 8}, {rec_off, 32}}, use_h, "PBHeap", &children);
  sweep(img, {{froot, 48}}, use_f, "PBAtomicFloat", &children);
  std::printf("[validation] PBHeap + PBAtomicFloat: %d sweep children\n", children);
}

// ------------------------------------------------------------- byte structures
TEST(CombiningValidation, PBBytesStackAndPBBytesQueue) {
  Image img;
  std::uint64_t sroot = 0, n1 = 0, n1_value = 0, n1_next = 0, qroot = 0, qn = 0, qn_next = 0;
  {
    auto p = pm::Pool::create(img.path.path, kPoolBytes);
    auto s = fc::PBBytesStack<>::create(*p, "s", 2);
    for (int i = 0; i < 4; ++i) s->push(0, std::string(static_cast<std::size_t>(10 * i + 1), static_cast<char>('a' + i)));
    (void)s->pop(1);
    s->push(0, "top");
    sroot = off_of(*p, s->stack().root());
    const auto* a = s->stack().top();
    n1 = off_of(*p, a);
    n1_value = off_of(*p, &a->value);
    n1_next = off_of(*p, &a->next);
    auto q = fc::PBBytesQueue<>::create(*p, "q", 2);
    for (int i = 0; i < 3; ++i) q->enqueue(0, std::string(20, 'q'));
    qroot = off_of(*p, q->queue().root());
    const auto* h = q->queue().head();
    qn = off_of(*p, h);
    qn_next = off_of(*p, &h->next);
  }
  img.load();
  auto use_s = [](pm::Pool& p) {
    auto s = fc::PBBytesStack<>::attach(p, "s", 2);
    bounded(64, [&] { return s->pop(0).has_value(); });
    s->push(1, "x");
  };
  auto use_q = [](pm::Pool& p) {
    auto q = fc::PBBytesQueue<>::attach(p, "q", 2);
    bounded(64, [&] { return q->dequeue(0).has_value(); });
    q->enqueue(1, "y");
  };
  ASSERT_EQ(run_damaged(img, {}, use_s), kClean);
  ASSERT_EQ(run_damaged(img, {}, use_q), kClean);
  expect_corrupt(img, {{n1_value, img.word(n1_value) + 64}}, use_s, "a node's payload offset");
  expect_corrupt(img, {{n1_value, 1}}, use_s, "a node's payload offset inside the header");
  expect_corrupt(img, {{n1_next, img.word(n1_next) ^ 8}}, use_s, "a flipped bit in a byte node's next");
  expect_corrupt(img, {{qn_next, img.word(qn_next) ^ 8}}, use_q, "a flipped bit in a byte queue node's next");
  int children = 0;
  sweep(img, {{sroot, 48}, {n1, 16}}, use_s, "PBBytesStack", &children);
  sweep(img, {{qroot, 48}, {qn, 16}}, use_q, "PBBytesQueue", &children);
  std::printf("[validation] byte structures: %d sweep children\n", children);
}

// ------------------------------------------------------------- PWFcomb structures
TEST(CombiningValidation, PWFStackQueueHeapFloat) {
  Image img;
  std::uint64_t sroot = 0, s_rec0 = 0, s_S = 0, s_n1 = 0, s_n1_next = 0, s_top = 0;
  std::uint64_t qroot = 0, q_head = 0, q_n1 = 0, q_n1_next = 0;
  std::uint64_t hroot = 0, h_size = 0, froot = 0, f_rec = 0, oplog_threads = 0;
  static_assert(offsetof(fc::PWFCombLayout, rec) == 88);
  {
    auto p = pm::Pool::create(img.path.path, kPoolBytes);
    auto s = fc::PWFStack<>::create(*p, "s", 2);
    for (int i = 1; i <= 5; ++i) s->push(0, s->comb().fresh_seq(0), i);
    auto* sr = p->root<fc::PWFStackRoot>("s");
    sroot = off_of(*p, sr);
    s_rec0 = off_of(*p, &sr->comb.rec[0]);
    s_S = off_of(*p, &sr->comb.s);
    const std::uint64_t* st = s->comb().current_state();
    s_top = off_of(*p, st);
    const auto* n = reinterpret_cast<const fc::PWFStackNode*>(st[0]);
    s_n1 = off_of(*p, n);
    s_n1_next = off_of(*p, &n->next);

    auto q = fc::PWFQueue<>::create(*p, "q", 2);
    for (int i = 1; i <= 5; ++i) q->enqueue(0, q->enq().fresh_seq(0), i);
    (void)q->dequeue(1, q->deq().fresh_seq(1));
    qroot = off_of(*p, p->root<fc::PWFQueueRoot>("q"));
    const std::uint64_t* ds = q->deq().current_state();
    q_head = off_of(*p, ds);
    const auto* h = reinterpret_cast<const fc::PWFQueueNode*>(ds[0]);
    q_n1 = off_of(*p, h);
    q_n1_next = off_of(*p, &h->next);

    auto hp = fc::PWFHeap<>::create(*p, "h", 2, 64);
    for (int i = 9; i > 0; --i) hp->insert(0, hp->comb().fresh_seq(0), i);
    hroot = off_of(*p, p->root<fc::PWFHeapRoot>("h"));
    h_size = off_of(*p, hp->comb().current_state());

    auto f = fc::PWFAtomicFloat<>::create(*p, "f", 2);
    f->mul(0, f->comb().fresh_seq(0), 2.0);
    auto* fr = p->root<fc::PWFFloatRoot>("f");
    froot = off_of(*p, fr);
    f_rec = off_of(*p, &fr->comb.rec[2]);

    auto log = ferrite::OpLog::create(*p, "log", 2);
    for (int i = 0; i < 3; ++i) log.begin(0, 1, 5);  // thread 0: seq 2 in slot 0, seq 3 (the latest) in slot 1
    oplog_threads = off_of(*p, p->root<ferrite::OpLogRoot>("log"));
  }
  img.load();
  auto use_s = [](pm::Pool& p) {
    auto s = fc::PWFStack<>::attach(p, "s", 2);
    bounded(64, [&] { return s->pop(0, s->comb().fresh_seq(0)).has_value(); });
    s->push(1, s->comb().fresh_seq(1), 4);
  };
  auto use_q = [](pm::Pool& p) {
    auto q = fc::PWFQueue<>::attach(p, "q", 2);
    bounded(64, [&] { return q->dequeue(0, q->deq().fresh_seq(0)).has_value(); });
    q->enqueue(1, q->enq().fresh_seq(1), 4);
  };
  auto use_h = [](pm::Pool& p) {
    auto h = fc::PWFHeap<>::attach(p, "h", 2);
    bounded(80, [&] { return h->delete_min(0, h->comb().fresh_seq(0)).has_value(); });
    h->insert(1, h->comb().fresh_seq(1), 4);
  };
  auto use_f = [](pm::Pool& p) {
    auto f = fc::PWFAtomicFloat<>::attach(p, "f", 2);
    f->mul(1, f->comb().fresh_seq(1), 3.0);
  };
  auto use_log = [](pm::Pool& p) {
    auto log = ferrite::OpLog::attach(p, "log", 1);
    for (int t = 0; t < log.max_threads(); ++t) (void)log.pending(t);
  };
  for (const auto& u : {std::function<void(pm::Pool&)>(use_s), std::function<void(pm::Pool&)>(use_q),
                        std::function<void(pm::Pool&)>(use_h), std::function<void(pm::Pool&)>(use_f),
                        std::function<void(pm::Pool&)>(use_log)})
    ASSERT_EQ(run_damaged(img, {}, u), kClean);
  const std::uint64_t base = img.word(s_top) - s_n1;
  expect_corrupt(img, {{s_rec0, img.word(s_rec0) + 8}}, use_s, "PWFStack StateRec pointer inside a block");
  expect_corrupt(img, {{s_S, (img.word(s_S) & ~std::uint64_t{0xff}) | 200}}, use_s, "PWFStack S names record 200");
  expect_corrupt(img, {{s_top, base + kPoolBytes + 64}}, use_s, "PWFStack top outside the pool");
  expect_corrupt(img, {{s_n1_next, img.word(s_n1_next) ^ 8}}, use_s, "PWFStack a flipped bit in a next pointer");
  expect_corrupt(img, {{s_n1_next, base + s_n1}}, use_s, "PWFStack a cycle");
  expect_corrupt(img, {{q_head, img.word(q_head) + 1}}, use_q, "PWFQueue Head misaligned");
  expect_corrupt(img, {{q_n1_next, img.word(q_n1_next) ^ 8}}, use_q, "PWFQueue a flipped bit in a next pointer");
  expect_corrupt(img, {{q_n1_next, base + q_n1}}, use_q, "PWFQueue a cycle from Head");
  expect_corrupt(img, {{q_n1_next, 0}}, use_q, "PWFQueue the list from Head cut short");
  expect_corrupt(img, {{h_size, 2000}}, use_h, "PWFHeap size > capacity");
  expect_corrupt(img, {{f_rec, img.word(f_rec) ^ (std::uint64_t{1} << 41)}}, use_f, "PWFAtomicFloat record pointer");
  expect_corrupt(img, {{oplog_threads, 1000, 4}}, use_log, "OpLog thread capacity");
  // Thread 0's records (line 0, at +64): slot 0 {seq 2}, slot 1 {seq 3, op 1, arg 5}.
  const std::uint64_t log_s0 = oplog_threads + 64, log_s1 = log_s0 + 32;
  expect_corrupt(img, {{log_s1, 3 ^ (std::uint64_t{1} << 40)}}, use_log, "OpLog a high bit of the latest seq");
  expect_corrupt(img, {{log_s1, 5}}, use_log, "OpLog the latest seq two ahead of the other");
  expect_corrupt(img, {{log_s0, 3}}, use_log, "OpLog a seq of the other slot's parity");
  expect_corrupt(img, {{log_s1 + 16, 5 ^ 0x10}}, use_log, "OpLog the latest record's argument");
  expect_corrupt(img, {{log_s1 + 8, 2, 4}}, use_log, "OpLog the latest record's op");
  int children = 0;
  sweep(img, {{sroot, 64 + 24 + 5 * 8}, {s_top - 32, 48}, {s_n1, 16}}, use_s, "PWFStack", &children);
  sweep(img, {{qroot + 64, 24 + 5 * 8}, {q_n1, 16}}, use_q, "PWFQueue", &children);
  sweep(img, {{hroot + 64, 24 + 5 * 8}, {h_size, 16}}, use_h, "PWFHeap", &children);
  sweep(img, {{froot + 64, 24 + 5 * 8}}, use_f, "PWFAtomicFloat", &children);
  sweep(img, {{oplog_threads, 8}, {log_s0, 64}}, use_log, "OpLog", &children);
  std::printf("[validation] PWF structures and OpLog: %d sweep children\n", children);
}

}  // namespace

}  // namespace combining_validation_test
