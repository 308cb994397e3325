// The only file in Ferrite that issues write-back and fence instructions.
#include "ferrite/persist/persist.h"

#include <cpuid.h>
#include <immintrin.h>

#include <chrono>
#include <charconv>
#include <deque>
#include <mutex>
#include <stdexcept>

namespace ferrite::persist {

std::string_view verb_name(Verb v) {
  static constexpr std::string_view kNames[kVerbCount] = {
      "pwb", "pfence", "psync", "ofence", "dfence", "persist_barrier", "new_strand", "join_strand"};
  const int i = static_cast<int>(v);
  return (i >= 0 && i < kVerbCount) ? kNames[i] : "?";
}

std::string_view flush_name(Flush f) {
  switch (f) {
    case Flush::kClwb: return "clwb";
    case Flush::kClflushopt: return "clflushopt";
    case Flush::kClflush: return "clflush";
    case Flush::kNone: return "none";
  }
  return "?";
}

Flush detect_flush() {
  static const Flush kDetected = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
      if (b & (1u << 24)) return Flush::kClwb;
      if (b & (1u << 23)) return Flush::kClflushopt;
    }
    if (__get_cpuid(1, &a, &b, &c, &d) && (d & (1u << 19))) return Flush::kClflush;
    return Flush::kNone;
  }();
  return kDetected;
}

namespace {

// ------------------------------------------------------------ instructions

__attribute__((target("clwb"))) void line_clwb(const void* p) { _mm_clwb(const_cast<void*>(p)); }
__attribute__((target("clflushopt"))) void line_clflushopt(const void* p) {
  _mm_clflushopt(const_cast<void*>(p));
}
void line_clflush(const void* p) { _mm_clflush(p); }
void line_none(const void*) {}
void fence_sfence() { _mm_sfence(); }
void nop() {}

// ------------------------------------------------------ emulated media delay

std::atomic<std::uint32_t> g_sync_delay_ns{0};
std::atomic<std::uint32_t> g_pwb_delay_ns{0};
std::atomic<Flush> g_flush{Flush::kNone};

inline void spin_ns(std::uint32_t ns) {
  if (ns == 0) return;
  const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(ns);
  while (std::chrono::steady_clock::now() < until) _mm_pause();
}

void (*line_fn(Flush f))(const void*) {
  switch (f) {
    case Flush::kClwb: return &line_clwb;
    case Flush::kClflushopt: return &line_clflushopt;
    case Flush::kClflush: return &line_clflush;
    case Flush::kNone: return &line_none;
  }
  return &line_none;
}

// Emulated backend: the instruction, then the configured media delay.
template <Flush F>
void emu_line(const void* p) {
  line_fn(F)(p);
  spin_ns(g_pwb_delay_ns.load(std::memory_order_relaxed));
}
void emu_sync() {
  _mm_sfence();
  spin_ns(g_sync_delay_ns.load(std::memory_order_relaxed));
}

Backend hardware_table(Flush f) {
  return Backend{"hardware", line_fn(f), &fence_sfence, &fence_sfence, &fence_sfence,
                 &fence_sfence, &fence_sfence, &nop, &fence_sfence, nullptr};
}

std::mutex g_tables_mu;
std::deque<Backend> g_tables;  // stable addresses; a handful per process

const Backend* intern(const Backend& b) {
  std::lock_guard lk(g_tables_mu);
  for (const auto& t : g_tables)
    if (t.name == b.name && t.pwb_line == b.pwb_line && t.pfence == b.pfence &&
        t.psync == b.psync && t.dfence == b.dfence && t.join_strand == b.join_strand &&
        t.declare_store == b.declare_store && t.site == b.site && t.stored == b.stored &&
        t.pfence_durable == b.pfence_durable)
      return &t;
  g_tables.push_back(b);
  return &g_tables.back();
}

const Backend* default_backend() {
  static const Backend* kDefault = [] {
    g_flush.store(detect_flush());
    return intern(hardware_table(detect_flush()));
  }();
  return kDefault;
}

bool parse_u32(std::string_view s, std::uint32_t* out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

namespace detail {
std::atomic<const Backend*> g_backend{default_backend()};

namespace {
CounterSlot g_slots[kMaxCounterSlots];
std::atomic<int> g_next_slot{0};
}  // namespace

CounterSlot* this_thread_slot() {
  // Slots are never recycled: a process that creates more than
  // kMaxCounterSlots threads shares the last slot among the excess (the
  // counts stay correct in sum only if those threads do not race; the
  // benchmark harness creates far fewer threads).
  thread_local CounterSlot* slot = [] {
    int i = g_next_slot.fetch_add(1, std::memory_order_relaxed);
    return &g_slots[i < kMaxCounterSlots ? i : kMaxCounterSlots - 1];
  }();
  return slot;
}

Counters sum_slots() {
  Counters c;
  const int used = std::min(g_next_slot.load(std::memory_order_acquire), kMaxCounterSlots);
  for (int s = 0; s < used; ++s)
    for (int i = 0; i < kVerbCount; ++i) c.n[i] += g_slots[s].n[i].load(std::memory_order_relaxed);
  return c;
}
void zero_slots() {
  const int used = std::min(g_next_slot.load(std::memory_order_acquire), kMaxCounterSlots);
  for (int s = 0; s < used; ++s)
    for (auto& x : g_slots[s].n) x.store(0, std::memory_order_relaxed);
}
}  // namespace detail

Counters counters() { return detail::sum_slots(); }
Counters thread_counters() {
  Counters c;
  auto* s = detail::this_thread_slot();
  for (int i = 0; i < kVerbCount; ++i) c.n[i] = s->n[i].load(std::memory_order_relaxed);
  return c;
}
void reset_counters() { detail::zero_slots(); }

std::string BackendConfig::to_string() const {
  switch (kind) {
    case Kind::kHardware:
      return force_flush == Flush::kNone ? "hardware"
                                         : "hardware:" + std::string(flush_name(force_flush));
    case Kind::kOff: return "off";
    case Kind::kNoSync: return "nosync";
    case Kind::kSim: return "sim";
    case Kind::kEmulated:
      return "emulated:" + std::to_string(sync_delay_ns) +
             (pwb_delay_ns ? ":" + std::to_string(pwb_delay_ns) : "");
  }
  return "?";
}

bool parse_backend(std::string_view text, BackendConfig* out) {
  BackendConfig c;
  using K = BackendConfig::Kind;
  if (text == "hardware") {
    c.kind = K::kHardware;
  } else if (text == "hardware:clwb" || text == "hardware:clflushopt" || text == "hardware:clflush") {
    c.kind = K::kHardware;
    auto f = text.substr(9);
    c.force_flush = f == "clwb" ? Flush::kClwb : f == "clflushopt" ? Flush::kClflushopt : Flush::kClflush;
  } else if (text == "off") {
    c.kind = K::kOff;
  } else if (text == "nosync" || text == "psync-off") {
    c.kind = K::kNoSync;
  } else if (text == "sim") {
    c.kind = K::kSim;
  } else if (text.substr(0, 9) == "emulated:") {
    c.kind = K::kEmulated;
    auto rest = text.substr(9);
    auto colon = rest.find(':');
    if (!parse_u32(rest.substr(0, colon), &c.sync_delay_ns)) return false;
    if (colon != std::string_view::npos && !parse_u32(rest.substr(colon + 1), &c.pwb_delay_ns))
      return false;
  } else {
    return false;
  }
  *out = c;
  return true;
}

const Backend* make_backend(const BackendConfig& cfg) {
  using K = BackendConfig::Kind;
  Flush f = cfg.force_flush == Flush::kNone ? detect_flush() : cfg.force_flush;
  if (f != Flush::kNone && f != Flush::kClflush && f > detect_flush())
    throw std::invalid_argument("this CPU does not support " + std::string(flush_name(f)));
  switch (cfg.kind) {
    case K::kHardware: {
      Backend b = hardware_table(f);
      b.name = cfg.force_flush == Flush::kNone ? "hardware" : "hardware-forced";
      return intern(b);
    }
    case K::kOff:
      return intern(Backend{"off", &line_none, &nop, &nop, &nop, &nop, &nop, &nop, &nop, nullptr});
    case K::kNoSync: {
      Backend b = hardware_table(f);
      b.name = "nosync";
      b.psync = b.dfence = b.join_strand = &nop;
      return intern(b);
    }
    case K::kEmulated: {
      g_sync_delay_ns.store(cfg.sync_delay_ns);
      g_pwb_delay_ns.store(cfg.pwb_delay_ns);
      void (*line)(const void*) = f == Flush::kClwb         ? &emu_line<Flush::kClwb>
                                  : f == Flush::kClflushopt ? &emu_line<Flush::kClflushopt>
                                                            : &emu_line<Flush::kClflush>;
      return intern(Backend{"emulated", line, &fence_sfence, &emu_sync, &fence_sfence, &emu_sync,
                            &fence_sfence, &nop, &emu_sync, nullptr});
    }
    case K::kSim:
      throw std::invalid_argument("the sim backend is provided by the crash simulator (crash/sim.h)");
  }
  return default_backend();
}

namespace {
SimHooks g_sim_hooks{nullptr, nullptr, nullptr, nullptr, nullptr};
}
void set_sim_hooks(const SimHooks& hooks) { g_sim_hooks = hooks; }
const Backend* sim_attach(void* base, std::size_t size) {
  if (g_sim_hooks.attach == nullptr)
    throw std::logic_error("sim backend requested but the crash simulator is not linked/enabled");
  return g_sim_hooks.attach(base, size);
}
void sim_detach(void* base) {
  if (g_sim_hooks.detach != nullptr) g_sim_hooks.detach(base);
}
bool sim_maps(void* base, std::size_t size) {
  return g_sim_hooks.maps != nullptr && g_sim_hooks.maps(base, size);
}
bool sim_keep_replica(void* at, std::size_t size) {
  return g_sim_hooks.keep_replica != nullptr && g_sim_hooks.keep_replica(at, size);
}
void* sim_replica(void* at, std::size_t size) {
  return g_sim_hooks.replica != nullptr ? g_sim_hooks.replica(at, size) : nullptr;
}

void install(const Backend* backend) {
  if (backend == nullptr) backend = default_backend();
  Flush f = Flush::kNone;
  if (backend->pwb_line == &line_clwb || backend->pwb_line == &emu_line<Flush::kClwb>)
    f = Flush::kClwb;
  else if (backend->pwb_line == &line_clflushopt || backend->pwb_line == &emu_line<Flush::kClflushopt>)
    f = Flush::kClflushopt;
  else if (backend->pwb_line == &line_clflush || backend->pwb_line == &emu_line<Flush::kClflush>)
    f = Flush::kClflush;
  g_flush.store(f, std::memory_order_relaxed);
  detail::g_backend.store(backend, std::memory_order_release);
}

const Backend* installed() { return detail::g_backend.load(std::memory_order_acquire); }
Flush active_flush() {
  (void)default_backend();
  return g_flush.load(std::memory_order_relaxed);
}

}  // namespace ferrite::persist
