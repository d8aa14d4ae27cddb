// Issue 19, classes 1 and 3: every output is replaced atomically or not at all, and every failed
// write is an error naming the file and why.
#include <sys/resource.h>
#include <sys/stat.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "../file_size_limit.h"

#include "cli/zbplan_cli.h"
#include "core/diag.h"  // shown_text
#include "core/output_file.h"

using namespace zbpp;

namespace {

// A fresh, empty directory per test case (ctest runs them at the same time).
std::string fresh_dir(const std::string& tag) {
  std::string dir = std::string(ZBPP_TEST_TMP) + "/output_file_" + tag;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

using test::FileSizeLimit;

int zbplan(std::vector<std::string> args, std::string* err) {
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out, errs;
  int code = run_zbplan(static_cast<int>(argv.size()), argv.data(), out, errs);
  *err = errs.str();
  return code;
}

}  // namespace

TEST_CASE("write_file_replacing: replaces the file whole and leaves no temporary file") {
  const std::string dir = fresh_dir("replace"), path = dir + "/a.json";
  std::string err;
  REQUIRE(write_file_replacing(path, "first\n", &err));
  ::chmod(path.c_str(), 0640);
  REQUIRE(write_file_replacing(path, "second\n", &err));
  CHECK(read_all(path) == "second\n");
  CHECK(names_in(dir) == std::vector<std::string>{"a.json"});
  struct stat st;
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0640);  // the replaced file keeps its permissions
}

TEST_CASE("write_file_replacing: a write that fails half way leaves the old file and no temporary file") {
  const std::string dir = fresh_dir("fail"), path = dir + "/a.json";
  std::string err;
  REQUIRE(write_file_replacing(path, "good\n", &err));
  {
    FileSizeLimit limit(4096);
    CHECK_FALSE(write_file_replacing(path, std::string(100000, 'x'), &err));
  }
  CHECK(err == path + ": File too large");
  CHECK(read_all(path) == "good\n");
  CHECK(names_in(dir) == std::vector<std::string>{"a.json"});
}

TEST_CASE("write_file_replacing: a device is written in place, its failures reported, a directory refused") {
  std::string err;
  CHECK(write_file_replacing("/dev/null", "anything", &err));
  CHECK_FALSE(write_file_replacing("/dev/full", "anything", &err));
  CHECK(err == "/dev/full: No space left on device");
  const std::string dir = fresh_dir("dir");
  CHECK_FALSE(write_file_replacing(dir, "x", &err));
  CHECK(err == dir + ": Is a directory");
  CHECK_FALSE(write_file_replacing(dir + "/no/such/a.json", "x", &err));
  CHECK(err == dir + "/no/such/a.json: No such file or directory (creating a temporary file in " + dir + "/no/such)");
}

TEST_CASE("ReplacingFile: pieces replace the file at commit, and given up, the old file stays and no temporary is left") {
  const std::string dir = fresh_dir("pieces"), path = dir + "/a.json";
  std::string err;
  REQUIRE(write_file_replacing(path, "old\n", &err));
  {
    ReplacingFile f;
    REQUIRE(f.open(path, &err));
    REQUIRE(f.write("new", &err));
    CHECK(names_in(dir).size() == 2);  // the temporary file beside the target
    CHECK(read_all(path) == "old\n");
  }  // no commit: a sink that failed (or an exception) ends here
  CHECK(read_all(path) == "old\n");
  CHECK(names_in(dir) == std::vector<std::string>{"a.json"});
  ReplacingFile g;
  REQUIRE(g.open(path, &err));
  REQUIRE(g.write("new", &err));
  REQUIRE(g.write(" text\n", &err));
  REQUIRE(g.commit(&err));
  CHECK(read_all(path) == "new text\n");
  CHECK(names_in(dir) == std::vector<std::string>{"a.json"});
  ReplacingFile full;
  REQUIRE(full.open("/dev/full", &err));
  CHECK_FALSE(full.write("x", &err));
  CHECK(err == "/dev/full: No space left on device");
}

TEST_CASE("StreamFile: every write and the close are checked") {
  StreamFile f;
  std::string err;
  REQUIRE(f.open("/dev/full", false, &err));
  CHECK_FALSE(f.write("{\"step\": 0}\n", &err));
  CHECK(err == "/dev/full: No space left on device");
  CHECK(f.close(&err));
  const std::string dir = fresh_dir("stream"), path = dir + "/m.jsonl";
  StreamFile g;
  REQUIRE(g.open(path, false, &err));
  REQUIRE(g.write("a\n", &err));
  REQUIRE(g.close(&err));
  StreamFile h;
  REQUIRE(h.open(path, true, &err));
  REQUIRE(h.write("b\n", &err));
  REQUIRE(h.close(&err));
  CHECK(read_all(path) == "a\nb\n");
}

TEST_CASE("check_writable_file and check_writable_dir: say why without creating anything") {
  const std::string dir = fresh_dir("check");
  CHECK(check_writable_file(dir + "/new.json") == "");
  CHECK(check_writable_file("/dev/full") == "");
  CHECK(check_writable_file(dir) == dir + ": Is a directory");
  CHECK(check_writable_file(dir + "/no/new.json") ==
        dir + "/no/new.json: No such file or directory (the directory " + dir + "/no)");
  CHECK(check_writable_dir(dir + "/a/b/c") == "");
  std::ofstream(dir + "/file") << "x";
  CHECK(check_writable_dir(dir + "/file/sub") == dir + "/file/sub: Not a directory");
  CHECK(names_in(dir) == std::vector<std::string>{"file"});
}

TEST_CASE("zbplan: every output survives a failed write and the failure is exit 1 naming the file") {
  const std::string dir = fresh_dir("zbplan"), path = dir + "/s.json";
  const std::vector<std::string> plan = {"zbplan", "plan", "--method", "zb-h1", "-p", "4", "-m", "8",
                                         "--tf", "1", "--tb", "1", "--tw", "1", "-o"};
  auto with = [&](const std::string& output) {
    auto args = plan;
    args.push_back(output);
    return args;
  };
  std::string err;
  REQUIRE(zbplan(with(path), &err) == 0);
  const std::string good = read_all(path);
  {
    FileSizeLimit limit(1024);  // the schedule is larger
    CHECK(zbplan(with(path), &err) == 1);
  }
  CHECK(err == "zbplan: cannot write " + path + ": File too large\n");
  CHECK(read_all(path) == good);
  CHECK(names_in(dir) == std::vector<std::string>{"s.json"});
  CHECK(zbplan(with("/dev/full"), &err) == 1);
  CHECK(err == "zbplan: cannot write /dev/full: No space left on device\n");
  // A big plan (27,000 ops, several pieces of text): the same.
  const std::vector<std::string> big = {"zbplan", "plan", "--method", "1f1b", "-p", "16", "-m", "256", "--tf", "1",
                                        "--tb", "1", "--tw", "1", "-o", path};
  {
    FileSizeLimit limit(1 << 20);  // the schedule is about 1.5 MB
    CHECK(zbplan(big, &err) == 1);
  }
  CHECK(err == "zbplan: cannot write " + path + ": File too large\n");
  CHECK(read_all(path) == good);
  CHECK(names_in(dir) == std::vector<std::string>{"s.json"});
  REQUIRE(zbplan(big, &err) == 0);
  CHECK(read_all(path).size() > (1u << 20));
  REQUIRE(zbplan(with(path), &err) == 0);
  // show wants a name ending in .svg: a link to /dev/full (the device is written, not the link).
  const std::string full_svg = dir + "/full.svg";
  std::filesystem::create_symlink("/dev/full", full_svg);
  for (std::vector<std::string> args : {std::vector<std::string>{"zbplan", "simulate", path, "--trace", "/dev/full"},
                                        {"zbplan", "show", path, "-o", full_svg},
                                        {"zbplan", "export", path, "-o", "/dev/full"}}) {
    INFO(args[1]);
    CHECK(zbplan(args, &err) == 1);
    CHECK(err == "zbplan: cannot write " + args.back() + ": No space left on device\n");
  }
}

TEST_CASE("zbplan show --measured: a span beyond what the drawing counts is a located error, never x=\"inf\"") {
  const std::string dir = fresh_dir("measured"), s = dir + "/s.json", trace = dir + "/t.json", svg = dir + "/s.svg";
  std::string err;
  REQUIRE(zbplan({"zbplan", "plan", "--method", "zb-h1", "-p", "2", "-m", "2", "--tf", "1", "--tb", "1", "--tw", "1",
                  "-o", s},
                 &err) == 0);
  std::ofstream(trace) << R"({"traceEvents": [{"ph": "X", "pid": 1, "tid": 0, "ts": 0, "dur": 1},
                                               {"ph": "X", "pid": 1, "tid": 1, "ts": 1e300, "dur": 1}]})";
  CHECK(zbplan({"zbplan", "show", s, "--measured", trace, "-o", svg}, &err) == 1);
  CHECK(err == "zbplan: " + trace + ": /traceEvents/1/ts: expected a number of microseconds 0..1e15, got 1e+300\n");
  CHECK(names_in(dir) == std::vector<std::string>{"s.json", "t.json"});
}

TEST_CASE("output_clash: an output that is an input or another output, by name, link or path, is named") {
  const std::string dir = std::string(ZBPP_TEST_TMP) + "/clash";
  std::filesystem::create_directories(dir + "/sub");
  const std::string in = dir + "/s.json";
  std::ofstream(in) << "{}";
  std::filesystem::remove(dir + "/link.json");
  std::filesystem::create_symlink(in, dir + "/link.json");
  std::filesystem::remove(dir + "/hard.json");
  std::filesystem::create_hard_link(in, dir + "/hard.json");
  using zbpp::output_clash;
  CHECK(output_clash({{"the schedule", in}}, {{"-o", in}}) ==
        "-o " + in + " is the same file as the schedule " + in + ": writing it would replace what is read; write it elsewhere");
  CHECK(output_clash({{"the schedule", dir + "/link.json"}}, {{"-o", in}}) != "");
  CHECK(output_clash({{"the schedule", in}}, {{"-o", dir + "/hard.json"}}) != "");
  CHECK(output_clash({{"the schedule", in}}, {{"-o", dir + "/sub/../s.json"}}) != "");
  // Two outputs of one name, neither there yet.
  CHECK(output_clash({}, {{"--metrics", dir + "/m.json"}, {"--trace", dir + "/sub/../m.json"}}) ==
        "--trace " + dir + "/sub/../m.json is the same file as --metrics " + dir +
            "/m.json: one would replace the other; give each output its own name");
  // Not clashes: other files, empty names, devices, an input that does not exist (a preset's name).
  CHECK(output_clash({{"the schedule", in}}, {{"-o", dir + "/other.json"}, {"--trace", ""}}) == "");
  CHECK(output_clash({}, {{"--metrics", "/dev/null"}, {"--trace", "/dev/null"}}) == "");
  CHECK(output_clash({{"--model", dir + "/tiny"}}, {{"--metrics", dir + "/tiny"}}) == "");
}

TEST_CASE("shown_text: control characters, DEL and bytes that are not UTF-8 escaped, long text cut") {
  using zbpp::shown_text;
  CHECK(shown_text("plain zb-h1") == "plain zb-h1");
  CHECK(shown_text("a\tb\nc\x7f" + std::string(1, '\0')) == "a\\tb\\nc\\x7f\\x00");
  CHECK(shown_text("caf\xc3\xa9 \xe2\x86\x92") == "caf\xc3\xa9 \xe2\x86\x92");  // UTF-8 kept
  CHECK(shown_text("\xff\xc3(\xed\xa0\x80") == "\\xff\\xc3(\\xed\\xa0\\x80");   // not UTF-8: escaped
  CHECK(shown_text(std::string(10, 'x'), 4) == "xxxx...(10 bytes)");
}

TEST_CASE("write_file_replacing: a legal 250-character name is written (its temporary's name is cut to fit)") {
  const std::string path = std::string(ZBPP_TEST_TMP) + "/" + std::string(250, 'n');
  std::string err;
  CHECK(zbpp::write_file_replacing(path, "text", &err));
  CHECK(err == "");
  std::ifstream in(path);
  std::string text;
  std::getline(in, text);
  CHECK(text == "text");
  std::filesystem::remove(path);
}
