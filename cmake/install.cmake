# SPDX-License-Identifier: Apache-2.0
# `make install` beyond the programs, the library and its header (CMakeLists.txt): default
# configuration, systemd units, the service user and its data directory, man pages.
# docs/operations.md, "Install". PREFIX /usr puts the configuration in /etc (GNUInstallDirs).

# The files that name installed paths (units, wharf.pc) and the default configuration
# (etc/wharfd-*.conf: /etc/wharf for PREFIX /usr, else PREFIX/etc/wharf) are written at install
# time for the prefix of that install (cmake/install_late.cmake). WHARF_SYSTEMD_UNITDIR: where
# the units go (default PREFIX/lib/systemd/system; the Debian package passes /lib/systemd/system,
# where Debian 12's dh_installsystemd looks).
set(WHARF_SYSTEMD_UNITDIR "" CACHE STRING "Where make install puts wharfd's systemd units")
install(CODE "set(WH_SRC \"${CMAKE_SOURCE_DIR}\")
set(WH_BIN \"${CMAKE_BINARY_DIR}\")
set(WH_LIBDIR \"${CMAKE_INSTALL_LIBDIR}\")
set(WH_INCLUDEDIR \"${CMAKE_INSTALL_INCLUDEDIR}\")
set(WH_VERSION \"${PROJECT_VERSION}\")
set(WH_UNITDIR \"${WHARF_SYSTEMD_UNITDIR}\")")
install(SCRIPT ${CMAKE_SOURCE_DIR}/cmake/install_late.cmake)
# Man pages from the programs' --help (scripts/gen_man.py, help2man): a build without
# help2man installs none and says so; the sanitizer and fuzz builds make none (their programs
# are for tests, never installed).
find_program(WH_HELP2MAN help2man)
if(WHARF_SANITIZE OR WHARF_TSAN OR WHARF_FUZZ)
  # no man pages
elseif(WH_HELP2MAN)
  set(WH_MAN_DIR ${CMAKE_BINARY_DIR}/man)
  add_custom_command(
    OUTPUT ${WH_MAN_DIR}/wharfd.1 ${WH_MAN_DIR}/wharf.1
    COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/scripts/gen_man.py --wharfd $<TARGET_FILE:wharfd>
            --wharf $<TARGET_FILE:wharf_cli> --out ${WH_MAN_DIR}
    DEPENDS wharfd wharf_cli ${CMAKE_SOURCE_DIR}/scripts/gen_man.py
    COMMENT "Man pages from --help (help2man)")
  add_custom_target(man ALL DEPENDS ${WH_MAN_DIR}/wharfd.1 ${WH_MAN_DIR}/wharf.1)
  install(FILES ${WH_MAN_DIR}/wharfd.1 ${WH_MAN_DIR}/wharf.1
          DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
else()
  message(WARNING "help2man not found: no man pages (scripts/deps.sh installs it)")
endif()
