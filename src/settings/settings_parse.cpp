// Reading the options: the command line and the INI config file through the
// option table, each key checked as it is stored; which sections a command
// reads; the teacher's overrides.
#include "mft/settings/options.hpp"

#include <boost/program_options.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>

namespace po = boost::program_options;

namespace mft {

namespace {

// The key of a command-line argument "--key" or "--key=value" ("" otherwise).
std::string argument_key(const std::string &a) {
  if (a.rfind("--", 0) != 0) return "";
  return a.substr(2, a.find('=') == std::string::npos ? std::string::npos : a.find('=') - 2);
}

// A key given twice on the command line: the last one wins (job scripts
// append overrides to a base list), so earlier occurrences are dropped.
std::vector<std::string> last_wins(const std::vector<std::string> &args, const std::vector<Option> &options) {
  auto key_of = [&](const std::string &a) -> std::string {
    const std::string k = argument_key(a);
    for (auto &o : options)
      if (o.key == k) return k;
    return "";
  };
  std::vector<bool> keep(args.size(), true);
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string k = key_of(args[i]);
    if (k.empty()) continue;
    const bool inline_value = args[i].find('=') != std::string::npos;
    for (size_t j = i + 1; j < args.size(); ++j)
      if (key_of(args[j]) == k) {
        keep[i] = false;
        if (!inline_value && i + 1 < args.size()) keep[i + 1] = false;
        break;
      }
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i)
    if (keep[i]) out.push_back(args[i]);
  return out;
}

// The option descriptions of a command: the general flags, every keyed
// option (what a config may hold), and the sections --help lists (what the
// command reads).
struct Descriptions {
  po::options_description general{"General"}, keyed;
  std::vector<std::pair<std::string, po::options_description>> sections;
};

void Describe(const std::string &command, const std::vector<Option> &options, Descriptions *d) {
  d->general.add_options()("help,h", "print the options and exit")("config", po::value<std::string>(),
                                                                    "INI file with [model], [data], ... sections");
  if (command == "forward") d->general.add_options()("gradient", "also compute g = L H dR/dtheta and write /grad");
  if (command == "study")
    d->general.add_options()("aggregate", po::value<std::string>(), "aggregate the case files of this study folder")(
        "replicates", po::value<std::string>(),
        "'DIR DIR ...': the same study run again with other init.seed; after aggregating, how often their fits "
        "agree and the fits pooled (replicates.csv, replicates_pooled.csv)")("list", "print the cases of the study and exit");
  if (command == "train")
    d->general.add_options()("restart", po::value<std::string>(),
                             "continue from a checkpoint FILE, or 'auto': the newest valid one in checkpoint.dir "
                             "(a fresh start when there is none)");
  for (auto &o : options) {
    std::string section = o.key.substr(0, o.key.find('.'));
    if (SettingsReads(command, o.key)) {
      if (d->sections.empty() || d->sections.back().first != section)
        d->sections.emplace_back(section, po::options_description("[" + section + "]"));
      d->sections.back().second.add_options()(o.key.c_str(), po::value<std::string>()->default_value(o.def),
                                              o.help.c_str());
    }
    d->keyed.add_options()(o.key.c_str(), po::value<std::string>()->default_value(o.def), o.help.c_str());
  }
}

// The first word of the command line that is neither an option nor an
// option's value, as a problem ("" when there is none): an unquoted list,
// --study.L 1 2 4, would otherwise keep its first entry and drop the rest.
std::string StrayWord(const std::vector<std::string> &args, const po::options_description &all) {
  std::string last; // the last option with a value
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string key = argument_key(args[i]);
    if (key.empty() && args[i] != "-h")
      return "'" + args[i] + "' is neither an option nor an option's value" +
             (last.empty() ? "" : " (" + last + " takes one value; a list is one argument, quoted: --study.L '1 2 4')");
    const po::option_description *o = key.empty() ? nullptr : all.find_nothrow(key, false);
    if (!key.empty() && !o) return ""; // an unknown option: the parser names it
    last = o && o->semantic()->max_tokens() > 0 ? "--" + key : "";
    if (!last.empty() && args[i].find('=') == std::string::npos) ++i; // its value
  }
  return "";
}

// The command line, then the config file, into vm; the problem, or "".
std::string ReadValues(const std::vector<std::string> &args, const std::vector<Option> &options,
                       const Descriptions &d, po::variables_map *vm) {
  try {
    po::options_description all;
    all.add(d.general).add(d.keyed);
    if (std::string stray = StrayWord(args, all); !stray.empty()) return stray;
    po::store(po::command_line_parser(last_wins(args, options)).options(all).run(), *vm);
    if (vm->count("config")) {
      std::string path = (*vm)["config"].as<std::string>();
      std::ifstream in(path);
      if (!in) throw BadValue("cannot open config file '" + path + "'");
      if (!std::filesystem::is_regular_file(path)) throw BadValue("config file '" + path + "' is not a file");
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3); // a UTF-8 byte-order mark (a Windows editor's)
      std::istringstream config(text);
      po::store(po::parse_config_file(config, d.keyed, false), *vm);
    }
    po::notify(*vm);
  } catch (const BadValue &e) {
    return e.what();
  } catch (const po::error &e) {
    std::string problem = e.what();
    if (problem.find("unrecognised option") != std::string::npos && vm->count("config"))
      problem += " (on the command line or in " + (*vm)["config"].as<std::string>() + ")";
    return problem;
  }
  return "";
}

// Every option's value into s (and its record). Input files named in a
// config file are found beside it (a config and its data travel together);
// on the command line, from the working folder. The problem, or "".
std::string StoreValues(const std::vector<std::string> &args, std::vector<Option> &options,
                        const po::variables_map &vm, Settings *s) {
  s->gradient = vm.count("gradient") > 0;
  if (vm.count("restart")) s->restart = vm["restart"].as<std::string>();
  if (vm.count("aggregate")) s->aggregate = vm["aggregate"].as<std::string>();
  if (vm.count("replicates")) s->replicates = vm["replicates"].as<std::string>();
  s->list_cases = vm.count("list") > 0;
  std::set<std::string> on_command_line;
  for (const std::string &a : args) on_command_line.insert(argument_key(a));
  const std::filesystem::path config_dir =
      vm.count("config") ? std::filesystem::path(vm["config"].as<std::string>()).parent_path() : "";
  const std::set<std::string> inputs = {"data.file", "data.heldout", "params.file", "study.probe_file",
                                        "worst.references", "worst.start"};
  auto beside_config = [&](const std::string &path) {
    return std::filesystem::path(path).is_relative() ? (config_dir / path).lexically_normal().string() : path;
  };
  for (auto &o : options) {
    std::string v = vm[o.key].as<std::string>();
    if (inputs.count(o.key) && !v.empty() && !vm[o.key].defaulted() && !on_command_line.count(o.key)) {
      std::istringstream paths(v); // a list of files (worst.references), each beside the config
      std::string w, all;
      while (paths >> w) all += (all.empty() ? "" : " ") + beside_config(w);
      v = o.key == "worst.references" ? all : beside_config(v);
    }
    if (!vm[o.key].defaulted()) s->explicit_keys.push_back(o.key);
    try {
      o.set(v);
    } catch (const BadValue &e) {
      return o.key + " " + e.what();
    }
    s->record.emplace_back(o.key, v);
  }
  try {
    (void)TeacherInit(*s);
  } catch (const std::invalid_argument &e) {
    return std::string("data.teacher_init ") + e.what();
  }
  return "";
}

// An option on the command line that the command does not read is a
// mistake: the problem naming the commands that read it, or "".
std::string UnusedOption(const std::string &command, const std::vector<std::string> &args,
                         const po::variables_map &vm) {
  for (const std::string &a : args) {
    const std::string key = argument_key(a);
    if (key.find('.') == std::string::npos || !vm.count(key) || SettingsReads(command, key)) continue;
    std::string users;
    for (const char *c : {"forward", "train", "ntk", "lse", "limit", "study", "bench", "worst"})
      if (SettingsReads(c, key)) users += std::string(users.empty() ? "" : ", ") + c;
    return key + " is not used by mft " + command + " (only by " + users + ")";
  }
  return "";
}

} // namespace

std::vector<std::string> split_arguments(int argc, char **argv, std::vector<std::string> &petsc_args) {
  std::vector<std::string> mine;
  petsc_args.assign(1, argc > 0 ? argv[0] : "mft");
  bool in_petsc = false;
  for (int a = 1; a < argc; ++a) {
    std::string arg = argv[a];
    bool single_dash = arg.size() > 1 && arg[0] == '-' && arg[1] != '-' && !std::isdigit((unsigned char)arg[1]) && arg[1] != '.';
    bool double_dash = arg.rfind("--", 0) == 0;
    if (single_dash) in_petsc = true;
    else if (double_dash) in_petsc = false;
    (in_petsc ? petsc_args : mine).push_back(arg);
  }
  return mine;
}

// The command line and config file into *s (unless --help is given, then
// *help); the first problem, or "".
static std::string Values(const std::string &command, const std::vector<std::string> &args, Settings *s,
                          Descriptions *d, bool *help) {
  *s = Settings();
  s->command = command;
  std::vector<Option> options = declare(*s);
  Describe(command, options, d);
  po::variables_map vm;
  std::string problem = ReadValues(args, options, *d, &vm);
  *help = vm.count("help") > 0;
  if (!problem.empty() || *help) return problem;
  problem = StoreValues(args, options, vm, s);
  if (s->model.infinite_head) s->model.k = s->model.d; // its k = d form (settings.hpp)
  return problem.empty() ? UnusedOption(command, args, vm) : problem;
}

PetscErrorCode SettingsParse(MPI_Comm comm, const std::string &command, const std::vector<std::string> &args,
                             Settings *s, PetscBool *help) {
  PetscFunctionBeginUser;
  Descriptions d;
  bool asked = false;
  const std::string problem = Values(command, args, s, &d, &asked);
  PetscCheck(problem.empty(), comm, PETSC_ERR_USER_INPUT, "%s", problem.c_str());
  *help = asked ? PETSC_TRUE : PETSC_FALSE;
  if (asked) {
    std::ostringstream os;
    os << "usage: mft " << command << " [--config FILE] [--section.key VALUE ...] [PETSc options]\n"
       << "Options on the command line override the config file; a key given twice: the last one wins.\n\n"
       << d.general;
    for (auto &sec : d.sections) os << "\n" << sec.second;
    PetscCall(PetscPrintf(comm, "%s", os.str().c_str()));
    PetscFunctionReturn(0);
  }
  PetscCall(SettingsCheckTogether(comm, *s));
  PetscCall(SettingsCheckOutputs(comm, command, *s));
  PetscFunctionReturn(0);
}

std::string SettingsProblem(const std::string &command, const std::vector<std::string> &args) {
  Settings s;
  Descriptions d;
  bool help;
  return Values(command, args, &s, &d, &help);
}

InitSettings TeacherInit(const Settings &s) {
  Settings teacher = s; // its init.* rows, bound to its own init
  const std::vector<Option> rows = declare(teacher);
  std::istringstream in(s.data.teacher_init);
  for (std::string kv; in >> kv;) {
    const size_t eq = kv.find('=');
    const std::string key = kv.substr(0, eq), value = eq == std::string::npos ? "" : kv.substr(eq + 1);
    if (eq == std::string::npos) throw std::invalid_argument("'" + kv + "' is not key=value (keys: law, q_gain .. o_mean)");
    const auto row = std::find_if(rows.begin(), rows.end(), [&](const Option &o) { return o.key == "init." + key; });
    if (key == "seed" || row == rows.end())
      throw std::invalid_argument("'" + kv + "' is not key=value with a key of init (law, q_gain .. o_mean)");
    try {
      row->set(value);
    } catch (const BadValue &e) {
      throw std::invalid_argument(key + ": " + e.what());
    }
  }
  return teacher.init;
}

std::vector<std::string> words(const std::string &text, char sep) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string w; std::getline(in, w, sep);) {
    const size_t a = w.find_first_not_of(" \t"), b = w.find_last_not_of(" \t");
    if (a != std::string::npos) out.push_back(w.substr(a, b - a + 1));
  }
  return out;
}

std::vector<PetscInt> integers(const std::string &text) {
  std::vector<PetscInt> out;
  for (auto &w : words(text)) {
    const size_t dash = w.find('-', 1); // "a-b": a .. b (study.only's ranges)
    const PetscInt a = (PetscInt)std::stoll(w.substr(0, dash));
    const PetscInt b = dash == std::string::npos ? a : (PetscInt)std::stoll(w.substr(dash + 1));
    for (PetscInt i = a; i <= b; ++i) out.push_back(i);
  }
  return out;
}

std::string NotReadable(const std::string &path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return "no such file";
  if (!std::filesystem::is_regular_file(path, ec)) return "not a file";
  return "";
}

} // namespace mft
