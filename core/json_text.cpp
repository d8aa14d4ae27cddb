// JSON text reading (see json_text.h).
#include "core/json_text.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

namespace zbpp {

namespace {

// 1-based line and column of a byte offset, and the text of that line.
void locate(const std::string& text, size_t offset, int* line, int* col, std::string* line_text) {
  offset = std::min(offset, text.size());
  size_t line_start = 0;
  *line = 1;
  for (size_t i = 0; i < offset; ++i)
    if (text[i] == '\n') {
      ++*line;
      line_start = i + 1;
    }
  *col = static_cast<int>(offset - line_start) + 1;
  size_t line_end = text.find('\n', line_start);
  *line_text = text.substr(line_start, line_end == std::string::npos ? std::string::npos : line_end - line_start);
}

// The DOM builder nlohmann::json::parse uses, following the path to each key: nlohmann keeps the
// last of two equal keys silently, and a file that says "p" twice is refused. (parse()'s callback
// variant would do, but it rescans a list after each element: quadratic in a file's op count.)
// Elements an ElementSink names are built apart, one at a time, and handed to it.
class KeyCheckingParser : public nlohmann::detail::json_sax_dom_parser<nlohmann::json> {
 public:
  using Base = nlohmann::detail::json_sax_dom_parser<nlohmann::json>;
  using json = nlohmann::json;
  KeyCheckingParser(json& root, const ElementSink* sink) : Base(root, true), sink_(sink) {}

  std::string duplicate;  ///< pointer of the first repeated key; empty when none

  bool null() { return value([](Base& to) { return to.null(); }); }
  bool boolean(bool v) { return value([&](Base& to) { return to.boolean(v); }); }
  bool number_integer(json::number_integer_t v) { return value([&](Base& to) { return to.number_integer(v); }); }
  bool number_unsigned(json::number_unsigned_t v) { return value([&](Base& to) { return to.number_unsigned(v); }); }
  bool number_float(json::number_float_t v, const json::string_t& s) {
    return value([&](Base& to) { return to.number_float(v, s); });
  }
  bool string(json::string_t& v) { return value([&](Base& to) { return to.string(v); }); }
  bool binary(json::binary_t& v) { return value([&](Base& to) { return to.binary(v); }); }
  bool start_object(std::size_t n) { return start(true, n); }
  bool start_array(std::size_t n) { return start(false, n); }
  bool end_object() { return end(true); }
  bool end_array() { return end(false); }
  bool key(json::string_t& k) {
    Frame& f = path_.back();
    f.key = k;
    if (!f.keys.insert(k).second && duplicate.empty())
      for (const Frame& at : path_) duplicate += "/" + escaped(at.object ? at.key : std::to_string(at.count - 1));
    return sub_ ? sub_->key(k) : Base::key(k);
  }

 private:
  struct Frame {
    bool object;
    size_t count;                // lists: elements begun so far (the current one is count - 1)
    std::string key;             // objects: the key being read
    std::set<std::string> keys;  // objects: the keys read so far
  };
  std::vector<Frame> path_;
  const ElementSink* sink_;
  json item_;                // the sink's element being built
  std::optional<Base> sub_;  // its builder, while inside it
  size_t depth_ = 0;         // objects and lists open inside it
  std::vector<size_t> indices_;  // the element's index in each of the sink's lists

  template <class Event>
  bool value(Event event) {
    element();
    if (sub_) return event(*sub_);
    if (!taking_here()) return event(*this);
    json item;
    Base one(item, true);
    const bool ok = event(one);
    give(item);
    return ok;
  }
  bool start(bool object, std::size_t n) {
    element();
    if (!sub_ && taking_here()) {
      item_ = json();
      sub_.emplace(item_, true);
    }
    path_.push_back({object, 0, "", {}});
    if (!sub_) return object ? Base::start_object(n) : Base::start_array(n);
    ++depth_;
    return object ? sub_->start_object(n) : sub_->start_array(n);
  }
  bool end(bool object) {
    path_.pop_back();
    if (!sub_) return object ? Base::end_object() : Base::end_array();
    const bool ok = object ? sub_->end_object() : sub_->end_array();
    if (--depth_ == 0) {
      sub_.reset();
      give(item_);
      item_ = json();
    }
    return ok;
  }
  // At an element of the sink's lists: the root object's key, then `depth` lists.
  bool taking_here() const {
    if (!sink_ || path_.size() != sink_->depth + 1 || !path_[0].object || path_[0].key != sink_->key) return false;
    return std::none_of(path_.begin() + 1, path_.end(), [](const Frame& f) { return f.object; });
  }
  void give(const json& element) {
    indices_.clear();  // reused: this runs once per op of a schedule
    for (size_t i = 1; i < path_.size(); ++i) indices_.push_back(path_[i].count - 1);
    sink_->take(element, indices_);
  }
  void element() {
    if (!path_.empty() && !path_.back().object) ++path_.back().count;
  }
  static std::string escaped(std::string part) {  // RFC 6901: ~ is ~0, / is ~1
    for (size_t at = 0; (at = part.find_first_of("~/", at)) != std::string::npos; at += 2)
      part.replace(at, 1, part[at] == '~' ? "~0" : "~1");
    return part;
  }
};

}  // namespace

bool read_text_file(const std::string& path, std::string* text, std::vector<Diag>* diags) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec)) {
    diags->push_back({path, "", -1, -1, "", "not a regular file"});
    return false;
  }
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int why = errno;  // set by the open(2) under the stream
    diags->push_back({path, "", -1, -1, "", std::string(kCannotOpen) + (why ? std::string(": ") + std::strerror(why) : "")});
    return false;
  }
  // Read into a string of the file's size: a stringstream would hold the text twice over, and a
  // schedule file of hundreds of MB is read within about its own size (issue 34, class 8).
  text->clear();
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec) text->reserve(size);
  std::vector<char> block(1 << 16);
  while (in.read(block.data(), static_cast<std::streamsize>(block.size())) || in.gcount() > 0)
    text->append(block.data(), static_cast<size_t>(in.gcount()));
  return true;
}

std::optional<nlohmann::json> parse_json_text(const std::string& text, const std::string& file, std::vector<Diag>* diags,
                                              const ElementSink* sink) {
  // `file:line:col: message`, then the line and a caret under the column.
  auto located = [&](size_t offset, const std::string& msg) {
    int line = 0, col = 0;
    std::string line_text;
    locate(text, offset, &line, &col, &line_text);
    size_t caret_at = static_cast<size_t>(std::max(0, col - 1));
    std::string where = "near here";
    if (line_text.empty() && offset >= text.size()) {
      // The file ends on an empty line: show its last line that holds something, the caret after it.
      size_t end = text.find_last_not_of(" \t\r\n");
      if (end != std::string::npos) {
        int last_line = 0, last_col = 0;
        locate(text, end, &last_line, &last_col, &line_text);
        caret_at = line_text.size();
        where = "the file ends here";
      } else {  // nothing but white space: no line to show
        diags->push_back({file + ":" + std::to_string(line) + ":" + std::to_string(col), "", -1, -1, "",
                          "invalid JSON: " + msg + " (the file is empty)"});
        return;
      }
    }
    if (line_text.size() > 120) {  // a minified file is one long line: show 60 characters either side
      size_t from = caret_at > 60 ? caret_at - 60 : 0;
      line_text = (from > 0 ? "..." : "") + line_text.substr(from, 120) + (from + 120 < line_text.size() ? "..." : "");
      caret_at = caret_at - from + (from > 0 ? 3 : 0);
    }
    std::string caret(caret_at, ' ');
    diags->push_back({file + ":" + std::to_string(line) + ":" + std::to_string(col), "", -1, -1, "",
                      "invalid JSON: " + msg + "\n" + line_text + "\n" + caret + "^ " + where});
  };
  try {
    nlohmann::json j;
    KeyCheckingParser parser(j, sink);
    nlohmann::json::sax_parse(text, &parser);
    if (parser.duplicate.empty()) return j;
    size_t slash = parser.duplicate.rfind('/');
    diags->push_back({file, parser.duplicate, -1, -1, "",
                      "duplicate key \"" + parser.duplicate.substr(slash + 1) +
                          "\": give each field once (JSON readers disagree on which one counts)"});
  } catch (const nlohmann::json::parse_error& e) {
    // nlohmann's byte is 1-based and points at the last character read.
    std::string what = e.what();
    size_t cut = what.find("parse error");
    located(e.byte == 0 ? 0 : e.byte - 1, cut == std::string::npos ? what : what.substr(cut));
  } catch (const nlohmann::json::out_of_range& e) {
    // A number beyond a double ("1e400") is not a parse_error and carries no position; it quotes
    // the literal, so point at its first occurrence.
    std::string what = e.what();
    size_t q1 = what.find('\''), q2 = what.rfind('\'');
    size_t at = q1 != std::string::npos && q2 > q1 ? text.find(what.substr(q1 + 1, q2 - q1 - 1)) : std::string::npos;
    size_t cut = what.find("number overflow");
    located(at == std::string::npos ? 0 : at,
            (cut == std::string::npos ? what : what.substr(cut)) + " (beyond the range of a double)");
  }
  return std::nullopt;
}

namespace {

// Appends `v` to *out until it holds `budget` characters; false when cut short. Recurses at most
// `budget` levels: each one adds a bracket first.
bool excerpt(const nlohmann::json& v, size_t budget, std::string* out) {
  if (out->size() >= budget) return false;
  if (!v.is_structured()) {
    *out += v.dump();
    return out->size() <= budget;
  }
  *out += v.is_array() ? '[' : '{';
  bool first = true;
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (!first) *out += ", ";
    first = false;
    if (v.is_object()) *out += nlohmann::json(it.key()).dump() + ": ";
    if (!excerpt(*it, budget, out)) return false;
  }
  *out += v.is_array() ? ']' : '}';
  return out->size() <= budget;
}

}  // namespace

std::string json_excerpt(const nlohmann::json& value) {
  constexpr size_t kBudget = 80;
  std::string out;
  if (!excerpt(value, kBudget, &out)) out = out.substr(0, kBudget) + "...";
  return out;
}

std::optional<long long> json_integer(const nlohmann::json& v, long long lo, long long hi) {
  if (!v.is_number_integer()) return std::nullopt;
  constexpr auto kMax = static_cast<unsigned long long>(std::numeric_limits<long long>::max());
  if (v.is_number_unsigned() && v.get<unsigned long long>() > kMax) return std::nullopt;
  long long x = v.get<long long>();
  if (x < lo || x > hi) return std::nullopt;
  return x;
}

}  // namespace zbpp
