// Persistence call sites (crash/sites.h).
//
// The table: open addressing over a MAP_SHARED anonymous mapping, so the
// processes a campaign forks after enable() (its zygote and workers) record
// into the same entries. An entry is claimed by a CAS of its key from 0 and
// published by `ready`; readers of a claimed but unpublished entry wait for
// it (a few stores away). File and function names are kept as the pointers
// std::source_location gives: every process is a fork of the same image, so
// they are valid in all of them.
#include "ferrite/crash/sites.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <tuple>

namespace ferrite::crash::sites {

namespace {

constexpr std::size_t kEntries = 4096;  // distinct sites a process tree may reach (the tree has ~200)

struct Entry {
  std::atomic<std::uint64_t> key{0};
  std::atomic<std::uint8_t> ready{0};
  std::atomic<std::uint8_t> suppressed{0};
  std::uint8_t verb = 0;
  std::uint32_t line = 0, column = 0;
  const char* file = nullptr;
  const char* function = nullptr;
  std::atomic<std::uint64_t> hits[kPhases] = {};
};

struct Table {
  std::atomic<std::uint64_t> suppressed_count{0};
  std::atomic<std::uint64_t> full{0};  // hits dropped because the table was full
  Entry entries[kEntries];
};

Table* g_table = nullptr;  // set once by enable(), before any fork that uses it
Phase g_phase = Phase::kRun;

struct Spec {
  std::string file;
  std::uint32_t line = 0, column = 0;  // column 0: any
  int verb = -1;                       // -1: any
};
std::vector<Spec> g_specs;  // inherited by forked workers with the table

// The path from the source root: the compiler's path of the file, from its
// first top-level source directory on.
std::string_view relative(const char* path) {
  std::string_view p(path);
  std::size_t best = std::string_view::npos;
  for (std::string_view d : {"/include/", "/src/", "/adapters/", "/tests/", "/bench/", "/tools/", "/examples/"}) {
    const auto i = p.rfind(d);
    if (i != std::string_view::npos && (best == std::string_view::npos || i > best)) best = i;
  }
  return best == std::string_view::npos ? p : p.substr(best + 1);
}

std::uint64_t key_of(const std::source_location& w, persist::Verb v) {
  // FNV-1a over the path, then line, column and verb mixed in; never 0.
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const char* c = w.file_name(); *c != 0; ++c) h = (h ^ static_cast<unsigned char>(*c)) * 0x100000001b3ull;
  h ^= (static_cast<std::uint64_t>(w.line()) << 24) ^ (static_cast<std::uint64_t>(w.column()) << 8) ^
       static_cast<std::uint64_t>(v);
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h == 0 ? 1 : h;
}

bool matches(const Spec& s, std::string_view file, std::uint32_t line, std::uint32_t column, int verb) {
  if (s.line != line || (s.column != 0 && s.column != column) || (s.verb >= 0 && s.verb != verb)) return false;
  if (file.size() < s.file.size() || file.substr(file.size() - s.file.size()) != s.file) return false;
  return file.size() == s.file.size() || file[file.size() - s.file.size() - 1] == '/';
}

bool suppressed_by_specs(const Entry& e) {
  const auto file = relative(e.file);
  for (const auto& s : g_specs)
    if (matches(s, file, e.line, e.column, e.verb)) return true;
  return false;
}

Spec parse(const std::string& text) {
  // FILE:LINE[:COL][:VERB] — split from the right (paths have no ':' here).
  std::vector<std::string> parts;
  std::size_t from = 0;
  for (;;) {
    const auto c = text.find(':', from);
    parts.push_back(text.substr(from, c == std::string::npos ? std::string::npos : c - from));
    if (c == std::string::npos) break;
    from = c + 1;
  }
  auto bad = [&](const std::string& why) {
    return std::invalid_argument("--mutate-site '" + text + "': " + why + " (expected FILE:LINE[:COL][:VERB])");
  };
  if (parts.size() < 2 || parts.size() > 4 || parts[0].empty()) throw bad("malformed");
  auto number = [&](const std::string& p) {
    if (p.empty() || p.size() > 9 || p.find_first_not_of("0123456789") != std::string::npos) throw bad("not a number: '" + p + "'");
    return static_cast<std::uint32_t>(std::stoul(p));
  };
  Spec s;
  s.file = parts[0];
  s.line = number(parts[1]);
  std::size_t i = 2;
  if (i < parts.size() && !parts[i].empty() && parts[i].find_first_not_of("0123456789") == std::string::npos)
    s.column = number(parts[i++]);
  if (i < parts.size()) {
    for (int v = 0; v < persist::kVerbCount; ++v)
      if (persist::verb_name(static_cast<persist::Verb>(v)) == parts[i]) s.verb = v;
    if (s.verb < 0) throw bad("unknown verb '" + parts[i] + "'");
    ++i;
  }
  if (i != parts.size()) throw bad("malformed");
  return s;
}

}  // namespace

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::kCreate: return "create";
    case Phase::kRun: return "run";
    case Phase::kRecover: return "recover";
    case Phase::kPost: return "post";
    default: return "?";
  }
}

std::string Site::id() const {
  return file + ":" + std::to_string(line) + ":" + std::to_string(column) + ":" + std::string(persist::verb_name(verb));
}

void enable() {
  if (g_table != nullptr) return;
  void* m = ::mmap(nullptr, sizeof(Table), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) throw std::system_error(errno, std::generic_category(), "call-site table: mmap");
  g_table = new (m) Table;
}

bool enabled() { return g_table != nullptr; }

void clear_hits() {
  if (g_table == nullptr) return;
  g_table->suppressed_count.store(0);
  g_table->full.store(0);
  for (auto& e : g_table->entries)
    for (auto& h : e.hits) h.store(0);
}

std::vector<Site> reached() {
  std::vector<Site> out;
  if (g_table == nullptr) return out;
  for (auto& e : g_table->entries) {
    if (e.key.load() == 0 || e.ready.load() == 0) continue;
    Site s;
    for (int p = 0; p < kPhases; ++p) s.hits[static_cast<std::size_t>(p)] = e.hits[p].load();
    if (std::all_of(s.hits.begin(), s.hits.end(), [](std::uint64_t h) { return h == 0; })) continue;
    s.file = std::string(relative(e.file));
    s.function = e.function;
    s.line = e.line;
    s.column = e.column;
    s.verb = static_cast<persist::Verb>(e.verb);
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(), [](const Site& a, const Site& b) {
    return std::tie(a.file, a.line, a.column, a.verb) < std::tie(b.file, b.line, b.column, b.verb);
  });
  return out;
}

void set_suppressed(const std::vector<std::string>& specs) {
  std::vector<Spec> parsed;
  for (const auto& t : specs) parsed.push_back(parse(t));
  enable();
  g_specs = std::move(parsed);
  for (auto& e : g_table->entries)
    if (e.key.load() != 0 && e.ready.load() != 0) e.suppressed.store(suppressed_by_specs(e) ? 1 : 0);
}

std::uint64_t suppressed_count() { return g_table == nullptr ? 0 : g_table->suppressed_count.load(); }

void set_phase(Phase p) { g_phase = p; }
Phase phase() { return g_phase; }

bool on_site(const std::source_location& where, persist::Verb v) {
  Table* t = g_table;
  if (t == nullptr) return true;
  const std::uint64_t key = key_of(where, v);
  for (std::size_t probe = 0; probe < kEntries; ++probe) {
    Entry& e = t->entries[(key + probe) % kEntries];
    std::uint64_t k = e.key.load(std::memory_order_acquire);
    if (k == 0) {
      if (e.key.compare_exchange_strong(k, key, std::memory_order_acq_rel)) {
        e.file = where.file_name();
        e.function = where.function_name();
        e.line = where.line();
        e.column = where.column();
        e.verb = static_cast<std::uint8_t>(v);
        e.suppressed.store(suppressed_by_specs(e) ? 1 : 0, std::memory_order_relaxed);
        // ORDER: release publishes the fields above to every process.
        e.ready.store(1, std::memory_order_release);
        k = key;
      }
    }
    if (k != key) continue;
    // ORDER: acquire pairs with the claimer's release of ready.
    while (e.ready.load(std::memory_order_acquire) == 0) {
    }
    e.hits[static_cast<int>(g_phase)].fetch_add(1, std::memory_order_relaxed);
    if (e.suppressed.load(std::memory_order_relaxed) == 0) return true;
    t->suppressed_count.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  t->full.fetch_add(1, std::memory_order_relaxed);
  return true;
}

}  // namespace ferrite::crash::sites
