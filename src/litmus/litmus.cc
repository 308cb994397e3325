// Persistency litmus tests (ferrite/litmus/litmus.h, docs/litmus.md): the
// parser and the exhaustive runner.
#include "ferrite/litmus/litmus.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <fstream>
#include <set>
#include <sstream>
#include <unordered_set>

namespace ferrite::litmus {

namespace {

constexpr std::size_t kL = persist::kCacheLine;

// ------------------------------------------------------------------ parsing

std::vector<std::string> words(std::string_view s) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    std::size_t j = i;
    while (j < s.size() && !std::isspace(static_cast<unsigned char>(s[j]))) ++j;
    if (j > i) out.emplace_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

bool parse_u64(const std::string& s, std::uint64_t* v) {
  if (s.empty()) return false;
  try {
    std::size_t used = 0;
    *v = std::stoull(s, &used, 0);
    return used == s.size() && s[0] != '-';
  } catch (...) {
    return false;
  }
}

bool is_reg(const std::string& s) {
  return s.size() >= 2 && s[0] == 'r' && std::all_of(s.begin() + 1, s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

bool is_ident(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

struct VerbName {
  const char* name;
  persist::Verb verb;
};
constexpr VerbName kVerbs[] = {
    {"pfence", persist::Verb::kPfence},         {"psync", persist::Verb::kPsync},
    {"ofence", persist::Verb::kOfence},         {"dfence", persist::Verb::kDfence},
    {"persist_barrier", persist::Verb::kPersistBarrier}, {"new_strand", persist::Verb::kNewStrand},
    {"join_strand", persist::Verb::kJoinStrand}, {"PB", persist::Verb::kPersistBarrier},
    {"NS", persist::Verb::kNewStrand},          {"JS", persist::Verb::kJoinStrand},
};

class Parser {
 public:
  Parser(std::string_view text, std::string file) : text_(text), file_(std::move(file)) {}

  std::vector<Test> run() {
    std::istringstream in{std::string(text_)};
    std::string raw;
    while (std::getline(in, raw)) {
      ++line_;
      if (auto h = raw.find('#'); h != std::string::npos) raw.resize(h);
      auto w = words(raw);
      if (w.empty()) continue;
      const std::string& kw = w[0];
      if (kw == "litmus") {
        finish();
        if (w.size() < 2 || !is_ident_name(w[1])) fail("'litmus' needs a test name (letters, digits, _ - .)");
        tests_.emplace_back();
        cur_ = &tests_.back();
        cur_->name = w[1];
        cur_->file = file_;
        cur_->line = line_;
        std::string d;
        for (std::size_t i = 2; i < w.size(); ++i) d += (d.empty() ? "" : " ") + w[i];
        if (d.size() >= 2 && d.front() == '"' && d.back() == '"') d = d.substr(1, d.size() - 2);
        cur_->description = d;
        thread_ = -1;
        continue;
      }
      if (cur_ == nullptr) fail("'" + kw + "' before the first 'litmus NAME' line");
      if (kw == "init") {
        for (std::size_t i = 1; i < w.size(); ++i) {
          std::string name = w[i];
          std::uint64_t v = 0;
          if (auto eq = name.find('='); eq != std::string::npos) {
            if (!parse_u64(name.substr(eq + 1), &v)) fail("bad initial value in '" + w[i] + "'");
            name.resize(eq);
          }
          if (!is_ident(name) || is_reg(name)) fail("bad variable name '" + name + "'");
          if (cur_->init.count(name) != 0) fail("variable '" + name + "' declared twice");
          cur_->vars.push_back(name);
          cur_->init[name] = v;
        }
      } else if (kw == "line") {
        if (w.size() < 3 || w.size() > 1 + kL / 8) fail("'line' takes 2 to 8 variables");
        std::vector<std::string> g;
        for (std::size_t i = 1; i < w.size(); ++i) {
          need_var(w[i]);
          for (const auto& other : cur_->groups)
            if (std::find(other.begin(), other.end(), w[i]) != other.end()) fail("'" + w[i] + "' is in two 'line' groups");
          if (std::find(g.begin(), g.end(), w[i]) != g.end()) fail("'" + w[i] + "' twice in one 'line'");
          g.push_back(w[i]);
        }
        cur_->groups.push_back(g);
      } else if (kw == "thread") {
        std::string n = w.size() == 2 ? w[1] : "";
        if (!n.empty() && n.back() == ':') n.pop_back();
        std::uint64_t t = 0;
        if (!parse_u64(n, &t)) fail("'thread' needs a number: 'thread 0'");
        if (t != cur_->threads.size()) fail("threads must be numbered 0, 1, 2, ... in order");
        cur_->threads.emplace_back();
        thread_ = static_cast<int>(t);
      } else if (kw == "crash") {
        if (!cur_->condition.empty()) fail("a second 'crash' condition");
        parse_condition(w);
      } else if (kw == "expect") {
        if (w.size() != 3 || (w[2] != "allowed" && w[2] != "forbidden"))
          fail("'expect MODEL allowed|forbidden'");
        if (crash::find_model(w[1]) == nullptr) fail("unknown model '" + w[1] + "'");
        if (cur_->expect.count(w[1]) != 0) fail("two expectations for model '" + w[1] + "'");
        cur_->expect[w[1]] = w[2] == "allowed";
      } else {
        if (thread_ < 0) fail("'" + kw + "' outside a thread (start one with 'thread 0')");
        parse_op(w);
      }
    }
    finish();
    if (tests_.empty()) throw ParseError(file_ + ": no 'litmus NAME' test in the file");
    return std::move(tests_);
  }

 private:
  static bool is_ident_name(const std::string& s) {
    return std::all_of(s.begin(), s.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == '+';
    });
  }

  [[noreturn]] void fail(const std::string& msg) const {
    throw ParseError(file_ + ":" + std::to_string(line_) + ": " + msg);
  }

  void need_var(const std::string& v) const {
    if (cur_->init.count(v) == 0) fail("unknown variable '" + v + "' (declare it with 'init')");
  }

  void parse_op(const std::vector<std::string>& w) {
    Op op;
    op.line = line_;
    const std::string& kw = w[0];
    auto value_or_reg = [&](const std::string& s) {
      if (is_reg(s)) {
        op.reg = s;
        if (regs_.count(std::to_string(thread_) + ":" + s) == 0) fail("register '" + s + "' is read before a 'load " + s + " X' of this thread");
      } else if (!parse_u64(s, &op.value)) {
        fail("bad value '" + s + "' (a number or a register rN)");
      }
    };
    if (kw == "store" || kw == "write" || kw == "persist") {
      if (w.size() != 3) fail("'" + kw + " VAR VALUE'");
      need_var(w[1]);
      op.kind = kw == "store" ? OpKind::kStore : kw == "write" ? OpKind::kWrite : OpKind::kPersist;
      op.var = w[1];
      value_or_reg(w[2]);
    } else if (kw == "load") {
      if (w.size() != 3 || !is_reg(w[1])) fail("'load rN VAR'");
      need_var(w[2]);
      op.kind = OpKind::kLoad;
      op.reg = w[1];
      op.var = w[2];
      regs_.insert(std::to_string(thread_) + ":" + w[1]);
    } else if (kw == "acquire" || kw == "release") {
      // A lock: a name of its own, not a variable (it is volatile: the
      // model sees its hand-offs, crash::LockEvent, not its word).
      if ((kw == "acquire" && (w.size() < 2 || w.size() > 3)) || (kw == "release" && w.size() != 2))
        fail("'acquire LOCK [rN]' / 'release LOCK'");
      if (!is_ident(w[1]) || is_reg(w[1])) fail("bad lock name '" + w[1] + "'");
      if (cur_->init.count(w[1]) != 0) fail("'" + w[1] + "' is a variable, not a lock");
      op.kind = kw == "acquire" ? OpKind::kAcquire : OpKind::kRelease;
      op.var = w[1];
      if (std::find(cur_->locks.begin(), cur_->locks.end(), w[1]) == cur_->locks.end()) cur_->locks.push_back(w[1]);
      if (w.size() == 3) {
        if (!is_reg(w[2])) fail("'acquire LOCK rN': bad register '" + w[2] + "'");
        op.reg = w[2];
        regs_.insert(std::to_string(thread_) + ":" + w[2]);
      }
    } else if (kw == "pwb") {
      if (w.size() != 2) fail("'pwb VAR'");
      need_var(w[1]);
      op.kind = OpKind::kPwb;
      op.var = w[1];
    } else {
      bool found = false;
      for (const auto& v : kVerbs)
        if (kw == v.name) {
          op.kind = OpKind::kVerb;
          op.verb = v.verb;
          found = true;
        }
      if (!found) fail("unknown operation '" + kw + "'");
      if (w.size() != 1) fail("'" + kw + "' takes no operand");
    }
    cur_->threads[static_cast<std::size_t>(thread_)].push_back(op);
  }

  void parse_condition(const std::vector<std::string>& w) {
    std::string text;
    for (std::size_t i = 1; i < w.size(); ++i) text += w[i] + " ";
    cur_->condition_text = text.empty() ? "" : text.substr(0, text.size() - 1);
    std::string flat;
    for (char c : text) flat += c == '&' ? ' ' : c;
    const auto atoms = words(flat);
    if (atoms.empty()) fail("'crash' needs a condition: 'crash A=0 & B=1'");
    for (const auto& a : atoms) {
      if (a == "and") continue;
      const auto eq = a.find('=');
      if (eq == std::string::npos) fail("bad condition term '" + a + "' (VAR=V, VAR=V/W or T:rN=V)");
      Atom at;
      at.var = a.substr(0, eq);
      if (auto colon = at.var.find(':'); colon != std::string::npos) {
        std::uint64_t t = 0;
        if (!parse_u64(at.var.substr(0, colon), &t) || !is_reg(at.var.substr(colon + 1)))
          fail("bad register term '" + a + "' (T:rN=V)");
      } else {
        need_var(at.var);
      }
      std::string vals = a.substr(eq + 1);
      std::size_t i = 0;
      while (true) {
        const auto slash = vals.find('/', i);
        std::uint64_t v = 0;
        if (!parse_u64(vals.substr(i, slash == std::string::npos ? std::string::npos : slash - i), &v))
          fail("bad value in condition term '" + a + "'");
        at.values.push_back(v);
        if (slash == std::string::npos) break;
        i = slash + 1;
      }
      cur_->condition.push_back(at);
    }
  }

  void finish() {
    if (cur_ == nullptr) return;
    if (cur_->vars.empty()) throw ParseError(file_ + ":" + std::to_string(cur_->line) + ": test '" + cur_->name + "' declares no variable ('init A=0 ...')");
    if (cur_->threads.empty()) throw ParseError(file_ + ":" + std::to_string(cur_->line) + ": test '" + cur_->name + "' has no thread");
    if (cur_->condition.empty()) throw ParseError(file_ + ":" + std::to_string(cur_->line) + ": test '" + cur_->name + "' has no 'crash' condition");
    for (const auto& a : cur_->condition) {
      const auto colon = a.var.find(':');
      if (colon == std::string::npos) continue;
      const auto t = std::stoull(a.var.substr(0, colon));
      bool loaded = false;
      if (t < cur_->threads.size())
        for (const auto& op : cur_->threads[t])
          loaded = loaded || ((op.kind == OpKind::kLoad || op.kind == OpKind::kAcquire) && op.reg == a.var.substr(colon + 1));
      if (!loaded) throw ParseError(file_ + ":" + std::to_string(cur_->line) + ": condition names '" + a.var + "', which no load of that thread sets");
    }
    cur_ = nullptr;
    regs_.clear();
  }

  std::string_view text_;
  std::string file_;
  int line_ = 0;
  std::vector<Test> tests_;
  Test* cur_ = nullptr;
  int thread_ = -1;
  std::set<std::string> regs_;  // "T:rN" loaded so far in the current test
};

// ------------------------------------------------------------------ running

class FakeMachine final : public crash::Machine {
 public:
  explicit FakeMachine(std::size_t size) : working_(size, 0), media_(size, 0) {}
  std::size_t size() const override { return working_.size(); }
  const std::uint8_t* working() const override { return working_.data(); }
  const std::uint8_t* media() const override { return media_.data(); }
  void write_media(std::uint64_t offset, const crash::Line& data) override {
    std::memcpy(media_.data() + offset, data.data(), kL);
  }
  std::uint8_t* working_mut() { return working_.data(); }
  void reset(const std::vector<std::uint8_t>& init) {
    working_ = init;
    media_ = init;
  }

 private:
  std::vector<std::uint8_t> working_, media_;
};

// One step of a thread: an op, or half of a `persist` (its store, its pwb).
struct Step {
  const Op* op = nullptr;
  bool pwb_half = false;
};

struct Runner {
  const Test& t;
  const crash::Model& m;
  std::map<std::string, std::uint64_t> offset;  // var -> byte offset
  std::vector<std::uint8_t> init;
  std::vector<std::vector<Step>> steps;
  crash::ImageOptions opt;
  Verdict v;
  std::unordered_set<std::string> seen;

  Runner(const Test& test, const crash::Model& model) : t(test), m(model) {
    std::size_t lines = 0;
    for (const auto& g : t.groups) {
      for (std::size_t i = 0; i < g.size(); ++i) offset[g[i]] = lines * kL + 8 * i;
      ++lines;
    }
    for (const auto& var : t.vars)
      if (offset.count(var) == 0) offset[var] = kL * lines++;
    init.assign(std::max<std::size_t>(lines, 1) * kL, 0);
    for (const auto& [var, val] : t.init) std::memcpy(init.data() + offset[var], &val, 8);
    for (const auto& th : t.threads) {
      steps.emplace_back();
      for (const auto& op : th) {
        steps.back().push_back({&op, false});
        if (op.kind == OpKind::kPersist) steps.back().push_back({&op, true});
      }
    }
    opt.tearing = true;
    opt.enumerate_lines = 1 << 20;
    opt.enumerate_max = 1 << 20;
  }

  // Replays `path` (thread ids) on a fresh machine and run; checks the
  // crash state after it.
  void visit(const std::vector<std::uint32_t>& path) {
    FakeMachine mach(init.size());
    mach.reset(init);
    auto run = m.start(mach);
    std::vector<std::map<std::string, std::uint64_t>> regs(t.threads.size());
    std::vector<std::size_t> pos(t.threads.size(), 0);
    std::vector<std::uint64_t> releases(t.locks.size(), 0);
    std::uint64_t k = 0;
    for (auto th : path) {
      const Step& s = steps[th][pos[th]++];
      const Op& op = *s.op;
      if (op.kind == OpKind::kAcquire || op.kind == OpKind::kRelease) {
        // A lock hand-off (explore runs an acquire only while the lock is free).
        crash::LockEvent e;
        e.thread = th;
        e.k = k;
        e.lock = lock_index(op.var);
        e.acquired = op.kind == OpKind::kAcquire;
        if (e.acquired && !op.reg.empty()) regs[th][op.reg] = releases[e.lock];
        if (!e.acquired) ++releases[e.lock];
        run->on_lock(e);
        continue;
      }
      const std::uint64_t off = offset.at(op.var.empty() ? t.vars.front() : op.var);
      if (s.pwb_half || op.kind == OpKind::kPwb) {
        crash::VerbEvent e;
        e.verb = persist::Verb::kPwb;
        e.thread = th;
        e.k = k++;
        e.offset = off & ~std::uint64_t{kL - 1};
        e.line = mach.working() + e.offset;
        run->on_verb(e);
      } else if (op.kind == OpKind::kVerb) {
        crash::VerbEvent e;
        e.verb = op.verb;
        e.thread = th;
        e.k = k++;
        run->on_verb(e);
      } else if (op.kind == OpKind::kLoad) {
        std::uint64_t val = 0;
        std::memcpy(&val, mach.working() + off, 8);
        regs[th][op.reg] = val;
        crash::LoadEvent e;
        e.thread = th;
        e.k = k;
        e.offset = off;
        e.size = 8;
        run->on_load(e);
      } else {  // store, write, persist's store half
        const std::uint64_t val = op.reg.empty() ? op.value : regs[th].at(op.reg);
        std::memcpy(mach.working_mut() + off, &val, 8);
        if (op.kind != OpKind::kWrite) {
          crash::StoreEvent e;
          e.kind = crash::StoreEvent::Kind::kStored;
          e.thread = th;
          e.k = k;
          e.offset = off;
          e.size = 8;
          run->on_store(e);
        }
      }
    }
    const crash::CrashState cs = crash::capture_state(mach, *run, m.name(), k);
    std::string key;
    cs.serialize(key);
    for (const auto& r : regs)
      for (const auto& [name, val] : r) key += name + "=" + std::to_string(val) + ";";
    key += "|";
    if (!seen.insert(key).second) return;
    ++v.crash_states;
    const crash::ImageSet set = crash::images_for(cs, 0, 1, opt);
    if (!set.exhaustive) throw std::runtime_error("litmus " + t.name + ": model " + std::string(m.name()) + " has too many images to enumerate at a crash point");
    std::vector<std::uint8_t> mem(init.size());
    for (const auto& img : set.images) {
      ++v.images;
      std::memcpy(mem.data(), mach.media(), mem.size());
      crash::install_image(cs, img, mem.data());
      if (v.allowed || !holds(mem, regs)) continue;
      v.allowed = true;
      std::string p;
      std::vector<std::size_t> at(t.threads.size(), 0);
      for (auto th : path) {
        const Step& s = steps[th][at[th]++];
        p += (p.empty() ? "" : " ") + std::to_string(th) + ":" + describe(s);
      }
      v.witness = "after [" + p + "] crash; image: " + img.how;
    }
  }

  static std::string describe(const Step& s) {
    const Op& op = *s.op;
    if (s.pwb_half) return "pwb(" + op.var + ")";
    switch (op.kind) {
      case OpKind::kStore:
      case OpKind::kWrite:
      case OpKind::kPersist:
        return std::string(op.kind == OpKind::kWrite ? "write " : "") + op.var + "=" +
               (op.reg.empty() ? std::to_string(op.value) : op.reg);
      case OpKind::kLoad:
        return op.reg + "=" + op.var;
      case OpKind::kPwb:
        return "pwb(" + op.var + ")";
      case OpKind::kVerb:
        return std::string(persist::verb_name(op.verb));
      case OpKind::kAcquire:
        return "acquire(" + op.var + ")";
      case OpKind::kRelease:
        return "release(" + op.var + ")";
    }
    return "?";
  }

  bool holds(const std::vector<std::uint8_t>& mem, const std::vector<std::map<std::string, std::uint64_t>>& regs) const {
    for (const auto& a : t.condition) {
      std::uint64_t val = 0;
      if (auto colon = a.var.find(':'); colon != std::string::npos) {
        const auto th = std::stoull(a.var.substr(0, colon));
        const auto& r = regs[th];
        auto it = r.find(a.var.substr(colon + 1));
        if (it == r.end()) return false;  // the load did not run before the crash
        val = it->second;
      } else {
        std::memcpy(&val, mem.data() + offset.at(a.var), 8);
      }
      if (std::find(a.values.begin(), a.values.end(), val) == a.values.end()) return false;
    }
    return true;
  }

  std::uint64_t lock_index(const std::string& name) const {
    return static_cast<std::uint64_t>(std::find(t.locks.begin(), t.locks.end(), name) - t.locks.begin());
  }

  // holder[l]: the thread holding lock l, -1 if free. An acquire of a held
  // lock is not enabled (a thread re-acquiring its own lock deadlocks: the
  // interleaving ends there).
  void explore(std::vector<std::uint32_t>& path, std::vector<std::size_t>& pos, std::vector<int>& holder) {
    visit(path);
    bool any = false;
    for (std::uint32_t th = 0; th < steps.size(); ++th) {
      if (pos[th] == steps[th].size()) continue;
      const Op& op = *steps[th][pos[th]].op;
      const bool lock_op = op.kind == OpKind::kAcquire || op.kind == OpKind::kRelease;
      const std::size_t l = lock_op ? lock_index(op.var) : 0;
      if (op.kind == OpKind::kAcquire && holder[l] >= 0) continue;
      const int was = lock_op ? holder[l] : 0;
      if (lock_op) holder[l] = op.kind == OpKind::kAcquire ? static_cast<int>(th) : -1;
      any = true;
      path.push_back(th);
      ++pos[th];
      explore(path, pos, holder);
      --pos[th];
      path.pop_back();
      if (lock_op) holder[l] = was;
    }
    if (!any) ++v.interleavings;
  }
};

}  // namespace

std::vector<Test> parse(std::string_view text, const std::string& file) { return Parser(text, file).run(); }

std::vector<Test> parse_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ParseError(path + ": cannot read the file");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse(ss.str(), path);
}

Verdict run(const Test& t, const crash::Model& m) {
  Runner r(t, m);
  std::vector<std::uint32_t> path;
  std::vector<std::size_t> pos(r.steps.size(), 0);
  std::vector<int> holder(t.locks.size(), -1);
  r.explore(path, pos, holder);
  return r.v;
}

}  // namespace ferrite::litmus
