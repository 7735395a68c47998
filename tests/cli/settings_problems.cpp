// The command-line checks of mft in one process: reads rows `COMMAND\x1fKEY\x1f
// VALUE\x1fPATTERN` (tests/cli/fuzz.sh's table) on standard input and prints,
// a row a line, the message `mft COMMAND --KEY VALUE` is refused with before
// MPI starts (SettingsProblem, what mft prints as `mft: error: ...` and exits
// 2 on), or an empty line where the refusal comes later.
#include "mft/settings/settings.hpp"

#include <iostream>
#include <sstream>
#include <string>
#include <vector>

int main() {
  std::string row;
  for (int n = 1; std::getline(std::cin, row); ++n) {
    std::vector<std::string> field;
    std::stringstream in(row);
    for (std::string f; std::getline(in, f, '\x1f');) field.push_back(f);
    if (field.size() == 3) field.push_back(""); // an empty pattern
    if (field.size() != 4) {
      std::cerr << "settings_problems: row " << n << " has " << field.size() << " fields, not 4\n";
      return 1;
    }
    std::cout << mft::SettingsProblem(field[0], {"--" + field[1], field[2]}) << '\n';
  }
  return 0;
}
