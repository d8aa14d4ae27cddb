// The command-line rules zbplan and zbrun share (see cli_common.h).
#include "cli/cli_common.h"

#include <algorithm>
#include <cctype>

namespace zbpp {

namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

// The type names CLI11 gives options by their C++ type; a validator's name after one is the better
// metavar ("INT:INT" -> "INT", "TEXT:FILE" -> "FILE").
std::string metavar(const CLI::Option* opt) {
  std::string name = opt->get_type_name();
  for (const char* type : {"TEXT:", "INT:", "UINT:", "FLOAT:"})
    if (name.rfind(type, 0) == 0) return name.substr(std::string(type).size());
  return name;
}

// --help: "--steps INT   training steps (default 20)": one metavar, and every captured default.
class HelpFormatter : public CLI::Formatter {
 public:
  HelpFormatter() { column_width(34); }
  std::string make_option_opts(const CLI::Option* opt) const override {
    if (!opt->get_option_text().empty()) return " " + opt->get_option_text();
    if (opt->get_type_size() == 0) return "";
    return " " + metavar(opt) + (opt->get_required() ? " REQUIRED" : "");
  }
  std::string make_option_desc(const CLI::Option* opt) const override {
    std::string text = opt->get_description();
    if (opt->get_type_size() == 0 || opt->get_default_str().empty()) return text;
    return text + " (default " + opt->get_default_str() + ")";
  }
};

// The deepest subcommand the command line reached (the app itself when none).
CLI::App* active_app(CLI::App* app) {
  for (CLI::App* sub : app->get_subcommands([](CLI::App* s) { return s->parsed(); })) return active_app(sub);
  return app;
}

// Every flag of `app` as written on the command line: "--stages", "-p".
void flag_names(const CLI::App* app, std::vector<std::string>* names) {
  for (const CLI::Option* opt : app->get_options()) {
    for (const auto& l : opt->get_lnames()) names->push_back("--" + l);
    for (const auto& s : opt->get_snames()) names->push_back("-" + s);
  }
}

// An ExtrasError, said with the closest flag or subcommand: CLI11 lists the words it did not
// expect ("2p --mem-limt": the value the unknown flag would have taken comes first).
std::string explain_extras(CLI::App* app, CLI::App* active) {
  std::vector<std::string> extras = app->remaining(true);
  // No subcommand was recognised: a mistyped one is what to say, not the flags meant for it
  // ("zbplan pln -p 2" would say "unknown flag -p").
  if (active == app && !app->get_subcommands({}).empty() && !extras.empty()) {
    if (!extras.front().empty() && extras.front()[0] != '-') {  // the first word: where a subcommand goes
      std::vector<std::string> subs;
      for (const CLI::App* sub : app->get_subcommands({})) subs.push_back(sub->get_name());
      const std::string closest = closest_name(extras.front(), subs);
      return "unknown subcommand '" + extras.front() + "'" + (closest.empty() ? "" : "; did you mean '" + closest + "'?") +
             " (subcommands: " + join_names(subs) + ")";
    }
  }
  for (const std::string& word : extras) {
    if (word.size() < 2 || word[0] != '-' || (word[1] >= '0' && word[1] <= '9') || word[1] == '.') continue;
    const std::string flag = word.substr(0, word.find('='));
    std::vector<std::string> known;
    flag_names(active, &known);
    if (active != app) flag_names(app, &known);
    std::string closest = closest_name(flag, known);
    return "unknown flag " + flag + (closest.empty() ? "" : "; did you mean " + closest + "?");
  }
  if (extras.empty()) return "";
  if (active == app && !app->get_subcommands({}).empty()) {
    std::vector<std::string> subs;
    for (const CLI::App* sub : app->get_subcommands({})) subs.push_back(sub->get_name());
    std::string closest = closest_name(extras.front(), subs);
    return "unknown subcommand '" + extras.front() + "'" + (closest.empty() ? "" : "; did you mean '" + closest + "'?") +
           " (subcommands: " + join_names(subs) + ")";
  }
  return "unexpected argument '" + extras.front() + "'" +
         (extras.size() > 1 ? " (and " + std::to_string(extras.size() - 1) + " more)" : "");
}

// CLI11 leaves a hidden option's name (group "", an old spelling kept working) out of its
// messages (": unknown place 'x'", "--new excludes "); the one given on the line is that name.
std::string name_hidden_option(const CLI::App* active, const std::string& what) {
  std::string name;
  for (const CLI::Option* opt : active->get_options())
    if (opt->get_group().empty() && opt->count() > 0 && !opt->get_lnames().empty())
      name = "--" + opt->get_lnames().front();
  if (name.empty() || what.empty()) return what;
  if (what.front() == ':' || what.front() == ' ') return name + what;
  return what.back() == ' ' ? what + name : what;
}

// CLI11's message for a parse error, reworded where it does not say what to do.
std::string explain(CLI::App* app, CLI::App* active, const CLI::ParseError& e) {
  const std::string what = name_hidden_option(active, e.what());
  if (dynamic_cast<const CLI::ExtrasError*>(&e)) {
    std::string said = explain_extras(app, active);
    if (!said.empty()) return said;
  }
  if (dynamic_cast<const CLI::RequiredError*>(&e) && what == "A subcommand is required") {
    if (std::string said = explain_extras(app, active); !said.empty()) return said;  // a mistyped subcommand
    std::vector<std::string> subs;
    for (const CLI::App* sub : app->get_subcommands({})) subs.push_back(sub->get_name());
    return "give a subcommand: " + join_names(subs);
  }
  // "--output is required": say what it is.
  if (dynamic_cast<const CLI::RequiredError*>(&e) && what.size() > 12 && what.substr(what.size() - 12) == " is required") {
    try {
      const CLI::Option* opt = active->get_option(what.substr(0, what.size() - 12));
      return what + " (" + opt->get_description() + ")";
    } catch (const CLI::Error&) {
    }
  }
  // "--tcomm: 1 required FLOAT:NUMBER missing": a flag at the end of the line, without its value.
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e)) {
    const size_t colon = what.find(": ");
    if (colon != std::string::npos && what.find(" required ") != std::string::npos) {
      const std::string flag = what.substr(0, colon);
      const CLI::Option* opt = nullptr;
      try {
        opt = active->get_option(flag);
      } catch (const CLI::Error&) {
      }
      return flag + " needs a value" + (opt ? " (" + metavar(opt) + ")" : "");
    }
  }
  return what;
}

}  // namespace

CLI::Validator one_of(const std::vector<std::string>& known, const std::string& what,
                      const std::vector<std::pair<std::string, std::string>>& aliases) {
  std::string bar;
  for (const auto& k : known) bar += (bar.empty() ? "" : "|") + k;
  return CLI::Validator(
      [known, what, aliases](std::string& value) {
        const std::string given = lower(value);
        for (const auto& k : known)
          if (lower(k) == given) {
            value = k;
            return std::string();
          }
        for (const auto& [alias, meaning] : aliases)
          if (lower(alias) == given) {
            value = meaning;
            return std::string();
          }
        std::vector<std::string> names = known;
        for (const auto& a : aliases) names.push_back(a.first);
        const std::string closest = closest_name(value, names);
        return "unknown " + what + " '" + value + "'" + (closest.empty() ? "" : "; did you mean '" + closest + "'?") +
               " (known: " + join_names(names) + ")";
      },
      bar);
}

void set_up_app(CLI::App* app, const std::string& program) {
  app->option_defaults()->always_capture_default();
  app->formatter(std::make_shared<HelpFormatter>());
  app->set_version_flag("--version", [program] { return version_text(program); },
                        "print the version, the git commit and what the build found (CBC, OpenBLAS, MPI, CUDA, NCCL: each "
                        "library's version or why not, and what uses it), and exit");
  app->set_help_flag("-h,--help", "print this help and exit");
  app->fallthrough();  // --version after a subcommand too: zbplan plan --version
}

int parse_command_line(CLI::App* app, int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  try {
    app->parse(argc, argv);
    return -1;
  } catch (const CLI::CallForVersion& e) {
    out << e.what();
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    CLI::App* active = active_app(app);
    if (e.get_exit_code() == 0) {  // --help, of the subcommand it follows
      out << active->help(active == app ? "" : app->get_name(), dynamic_cast<const CLI::CallForAllHelp*>(&e) ? CLI::AppFormatMode::All
                                                                           : CLI::AppFormatMode::Normal);
      return kExitOk;
    }
    return usage_error(err, app->get_name(), active == app ? "" : active->get_name(), explain(app, active, e));
  }
}

int usage_error(std::ostream& err, const std::string& program, const std::string& sub, const std::string& message) {
  err << program << ": " << message << "\nrun '" << program << (sub.empty() ? "" : " " + sub) << " --help' for usage\n";
  return kExitUsage;
}

}  // namespace zbpp
