// tests/repo/repo_test.cc — the repository stands on its own: no file of it
// (git ls-files, plus new files not ignored) names a place outside it.
//
// Flagged, in any text file:
//  * the sibling directories of the development setup (the literals are
//    spelled in pieces in scan() so this file does not flag itself);
//  * a relative path that climbs above the repository root (two levels of
//    ".." in a file one directory deep);
//  * an absolute path under a top-level directory that belongs to one
//    machine: home directories, opt, etc, var, mnt, ... (machine_dirs()).
// Allowed: the kernel's and the system's standard interfaces, which every
// Linux machine has and code legitimately names — /dev (/dev/shm,
// /dev/null), /proc, /sys, /tmp, /usr (/usr/bin/env, /usr/local), /bin/sh —
// and paths that tests use because they do not exist (/nonexistent...).
// Strings that only start with a slash ("/bench.json" appended to a
// directory, the regex "/main\\.cc$") are not absolute paths: only the known
// top-level directories above are looked at.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace repo_test {  // this file's names, apart in a unity build

namespace {

const std::string kRoot = FERRITE_SOURCE_DIR;

// Tracked files and untracked ones that are not ignored (what the next
// commit can contain). Empty when git or the repository is not there.
std::vector<std::string> repository_files(std::string* why) {
  const std::string cmd =
      "git -C '" + kRoot + "' ls-files -z --cached --others --exclude-standard 2>/dev/null";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) {
    *why = "popen failed";
    return {};
  }
  std::string out;
  char buf[65536];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int st = ::pclose(p);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    *why = "`git ls-files` failed in " + kRoot + " (no git, or not a git checkout)";
    return {};
  }
  std::vector<std::string> files;
  std::set<std::string> seen;
  for (std::size_t i = 0; i < out.size();) {
    const std::size_t z = out.find('\0', i);
    const std::string f = out.substr(i, z == std::string::npos ? std::string::npos : z - i);
    if (!f.empty() && seen.insert(f).second) files.push_back(f);
    if (z == std::string::npos) break;
    i = z + 1;
  }
  return files;
}

bool read_text(const std::string& path, std::string* text) {
  struct stat st{};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;  // deleted, symlink
  std::ifstream f(path, std::ios::binary);
  text->assign(std::istreambuf_iterator<char>(f), {});
  return text->find('\0') == std::string::npos;  // binary files are not read
}

bool path_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '-' || c == '+' || c == '/';
}
bool boundary(char c) {
  return std::string_view(" \t\r\n\"'`([{<=,:;|").find(c) != std::string_view::npos;
}

// Top-level directories that name one machine's layout.
const std::set<std::string>& machine_dirs() {
  static const std::set<std::string> d = {
      "home", "root", "work", "workspace", "shared", "opt", "etc", "var", "mnt", "srv", "media", "run",
      "boot", "lib", "lib32", "lib64", "libx32", "sbin", "snap", "nix", "scratch", "data", "Users",
      "Volumes", "private", "afs", "net", "cygdrive"};
  return d;
}

struct Finding {
  std::size_t line;
  std::string what;
};

std::vector<Finding> scan(const std::string& file, const std::string& text) {
  std::vector<Finding> found;
  const std::size_t depth = static_cast<std::size_t>(std::count(file.begin(), file.end(), '/'));
  auto line_of = [&](std::size_t pos) {
    return static_cast<std::size_t>(std::count(text.begin(), text.begin() + static_cast<long>(pos), '\n')) + 1;
  };
  const std::string sibling = std::string("../sha") + "red";
  const std::string work = std::string("/wo") + "rk/";
  for (const std::string* lit : {&sibling, &work})
    for (std::size_t p = text.find(*lit); p != std::string::npos; p = text.find(*lit, p + 1))
      found.push_back({line_of(p), "names " + *lit});
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (i > 0 && !boundary(text[i - 1])) continue;
    std::size_t j = i;
    while (j < text.size() && path_char(text[j])) ++j;
    const std::string tok = text.substr(i, j - i);
    if (tok.size() < 2) continue;
    if (tok[0] == '/') {
      const std::string top = tok.substr(1, tok.find('/', 1) == std::string::npos ? std::string::npos : tok.find('/', 1) - 1);
      if (machine_dirs().count(top) != 0 && (tok.size() == top.size() + 1 || tok[top.size() + 1] == '/'))
        found.push_back({line_of(i), "absolute path outside the repository: " + tok});
    } else if (tok.rfind("../", 0) == 0) {
      std::size_t up = 0;
      for (std::size_t k = 0; tok.compare(k, 3, "../") == 0; k += 3) ++up;
      if (up > depth) found.push_back({line_of(i), "relative path above the repository root: " + tok});
    }
    if (j > i) i = j - 1;
  }
  return found;
}

TEST(Repository, NamesNothingOutsideItself) {
  std::string why;
  const auto files = repository_files(&why);
  if (files.empty()) GTEST_SKIP() << why;
  std::size_t scanned = 0;
  std::ostringstream report;
  std::size_t problems = 0;
  for (const auto& f : files) {
    std::string text;
    if (!read_text(kRoot + "/" + f, &text)) continue;
    ++scanned;
    for (const auto& x : scan(f, text)) {
      ++problems;
      report << "  " << f << ":" << x.line << ": " << x.what << "\n";
    }
  }
  EXPECT_GT(scanned, 50u) << "too few files: is " << kRoot << " the repository?";
  EXPECT_EQ(problems, 0u) << "files that name places outside the repository (it must stand on its own):\n"
                          << report.str();
}

// The scanner itself: what it must flag and what it must let through.
TEST(Repository, ScannerFlagsOutsidePathsOnly) {
  const std::string home = std::string("/ho") + "me/alice/x.txt";
  EXPECT_EQ(scan("a.md", "see " + home).size(), 1u);
  EXPECT_EQ(scan("a.md", std::string("\"/o") + "pt/ferrite\"").size(), 1u);
  EXPECT_EQ(scan("a.md", std::string("(../") + "../papers/x.txt)").size(), 1u);  // above the root
  EXPECT_EQ(scan("docs/a.md", std::string("[x](../") + "examples/e.cc)").size(), 0u);
  EXPECT_EQ(scan("a.cc", "\"/dev/shm/x.pool\" \"/proc/self/exe\" \"/dev/null\" /usr/bin/env /tmp /sys/x").size(),
            0u);
  EXPECT_EQ(scan("a.cc", "dir + \"/bench.json\"; REGEX \"/main\\\\.cc$\"; ops/s; a / b; https://x.org/y").size(), 0u);
  EXPECT_EQ(scan("a.cc", "--pool-dir /nonexistent/dir").size(), 0u);
}

}  // namespace

}  // namespace repo_test
