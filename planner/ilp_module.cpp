// refine_ilp() for every program: loads the ILP module (refine_ilp.cpp with CBC, libzbpp_ilp.so)
// on first use and calls into it (see refine_ilp.h). Only a run that reaches the ILP pays for
// loading CBC, Clp, LAPACK and OpenBLAS, and starting OpenBLAS's threads.
#include "planner/refine_ilp.h"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <mutex>

#include "core/bounds.h"

namespace zbpp {

std::string IlpResult::summary() const {
  char buf[320];
  double gap = relative_gap(cost, lower_bound * kQuantaPerUnit);
  std::snprintf(buf, sizeof buf,
                "%s %s (warm start %s), lower bound %.6f, gap %.4f %%, %s, %s model, %d model(s), %ld nodes, %.1f s",
                cost_name(measure), format_quanta(cost).c_str(),
                format_quanta(warm_cost).c_str(), lower_bound, 100 * gap, solve_status_name(status), ilp_mode_name(mode), windows,
                nodes, seconds);
  return buf;
}

std::vector<std::string> ilp_module_paths() {
  char exe[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  std::string dir = ".";
  if (n > 0) {
    dir.assign(exe, static_cast<size_t>(n));
    dir = dir.substr(0, dir.find_last_of('/'));
  }
  return {dir + "/" + kIlpModuleFile, dir + "/../lib/zbpp/" + kIlpModuleFile};
}

std::optional<IlpRefineFunction> load_ilp_module(const std::vector<std::string>& paths, std::string* why) {
  const std::string what_to_do =
      "build zbplan where CBC is installed (coinor-libcbc-dev; cmake then builds the module beside zbplan), or put " +
      std::string(kIlpModuleFile) + " beside the program or in its ../lib/zbpp";
  std::string tried;
  for (const std::string& path : paths) {
    if (::access(path.c_str(), F_OK) != 0) {
      tried += (tried.empty() ? "" : ", ") + path;
      continue;
    }
    // RTLD_LOCAL: CBC's symbols stay in the module. It is never unloaded (CBC keeps static state).
    void* module = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!module) {
      const char* error = ::dlerror();
      *why = "the ILP module " + path + " cannot be loaded: " + (error ? error : "unknown error") +
             "; if that names a missing CBC library, install CBC (Debian: coinor-libcbc3), else rebuild zbplan";
      return std::nullopt;
    }
    auto abi = reinterpret_cast<const char* (*)()>(::dlsym(module, "zbpp_ilp_abi"));
    auto refine = reinterpret_cast<IlpRefineFunction>(::dlsym(module, "zbpp_ilp_refine"));
    if (!abi || !refine) {
      *why = "the ILP module " + path + " is not one of zbpp's (it lacks zbpp_ilp_abi or zbpp_ilp_refine); " + what_to_do;
      return std::nullopt;
    }
    if (abi() != ilp_module_abi()) {
      *why = "the ILP module " + path + " was built from other sources than this program (module: " + abi() +
             "; program: " + ilp_module_abi() + "): rebuild both";
      return std::nullopt;
    }
    return refine;
  }
  *why = "the ILP needs its module " + std::string(kIlpModuleFile) + ", which is not at " + tried + "; " + what_to_do;
  return std::nullopt;
}

std::optional<IlpResult> refine_ilp(const Problem& problem, const Schedule& warm, const IlpOptions& options,
                                    std::vector<Diag>* diags) {
  // Loaded once per process; a failure is kept too, so every call reports the same reason.
  static std::once_flag once;
  static std::optional<IlpRefineFunction> refine;
  static std::string why;
  std::call_once(once, [] { refine = load_ilp_module(ilp_module_paths(), &why); });
  if (!refine) {
    diags->push_back({"", "", -1, -1, "", "ilp: " + why});
    return std::nullopt;
  }
  IlpResult result;
  if (!(*refine)(problem, warm, options, diags, &result)) return std::nullopt;
  return result;
}

}  // namespace zbpp
