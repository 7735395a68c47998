// The option table: one Option per key a config file or the command line
// may hold (its default as text, its meaning, how a value is checked and
// stored), built in settings.cpp; read by SettingsParse (settings_parse.cpp),
// checked together by settings_check.cpp.
#pragma once

#include "mft/settings/settings.hpp"

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace mft {

// A bad value: the message names the key and what is wrong.
struct BadValue : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// One option: its key, its default as text, its meaning, how it is stored,
// which commands read it and whether it defines a run. The last two are its
// section's (settings.cpp, kSections) unless the row says otherwise.
struct Option {
  std::string key, def, help;
  std::function<void(const std::string &)> set;
  std::vector<std::string> readers;                  // empty: the section's readers
  std::function<bool(const Settings &)> defines_run; // empty: the section's rule

  Option(std::string key, std::string def, std::string help, std::function<void(const std::string &)> set)
      : key(std::move(key)), def(std::move(def)), help(std::move(help)), set(std::move(set)) {}

  // The row with its own readers, or its own run-defining rule (always, or
  // when `when` holds for the run's settings).
  Option read_by(std::vector<std::string> commands) const;
  Option defining(std::function<bool(const Settings &)> when = nullptr) const;
};

// The row of `key` in the option table; nullptr for a key it does not hold.
// Not collective.
const Option *FindOption(const std::string &key);

// A finite real number, or BadValue naming the text.
// Not collective.
double parse_real(const std::string &v);

// The words of a text (separated by sep, trimmed) and its integers (a word
// "a-b" is a .. b): option values that are lists.
// Not collective.
std::vector<std::string> words(const std::string &text, char sep = ' ');
std::vector<PetscInt> integers(const std::string &text);

// Why path cannot be opened for reading before HDF5 sees it ("no such file",
// "not a file"), or empty: MPI-IO prints lines of its own on a folder.
// Not collective.
std::string NotReadable(const std::string &path);

// The shortest text that reads back as x (0.1, not 0.10000000000000001).
// Not collective.
std::string format_real(double x);

// Every option, each bound to its field of s.
// Not collective.
std::vector<Option> declare(Settings &s);

// Settings that are valid one by one but not together (and a study's grid).
// Not collective: every rank makes the same checks (comm carries the errors).
PetscErrorCode SettingsCheckTogether(MPI_Comm comm, const Settings &s);

// Every file and folder the command will write can be written, tried before
// any work by one rank.
// Collective on comm (rank 0 tries, and broadcasts what it found).
PetscErrorCode SettingsCheckOutputs(MPI_Comm comm, const std::string &command, const Settings &s);

} // namespace mft
