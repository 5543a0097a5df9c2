// Where fasa keeps what it downloads and makes for a user: $FASA_HOME, else ~/.cache/fasa
// (models/, texts/, calibrations/, test venvs).
#pragma once

#include <filesystem>

namespace fasa {

// Always absolute. Throws fasa::Error when neither $FASA_HOME, $HOME nor the password database
// names a home directory.
std::filesystem::path fasa_home();

}  // namespace fasa
