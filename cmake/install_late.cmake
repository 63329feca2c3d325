# SPDX-License-Identifier: Apache-2.0
# Runs at install time (install(SCRIPT), cmake/install.cmake): writes the files that name
# installed paths (wharf.pc, the systemd units) for the prefix of this install, so that
# `cmake --install BUILD --prefix P` and `make install PREFIX=P` need no reconfigure.
# Set by install.cmake: WH_SRC, WH_BIN, WH_LIBDIR, WH_INCLUDEDIR, WH_VERSION, WH_UNITDIR (empty:
# PREFIX/lib/systemd/system).
set(p "${CMAKE_INSTALL_PREFIX}")
if(p STREQUAL "/usr")
  set(WHARF_CONFDIR /etc/wharf)
else()
  set(WHARF_CONFDIR "${p}/etc/wharf")
endif()
set(WHARF_BINDIR "${p}/bin")
set(WHARF_STATEDIR /var/lib/wharf)
set(unitdir "${WH_UNITDIR}")
if(NOT unitdir)
  set(unitdir "${p}/lib/systemd/system")
endif()
# A directory of this install's own: installs to several prefixes may run at once (the tests).
string(RANDOM LENGTH 12 tag)
set(gen "${WH_BIN}/install-gen/${tag}")
file(MAKE_DIRECTORY "${gen}/systemd")

file(READ "${WH_SRC}/packaging/systemd/common.in" WHARF_UNIT_COMMON)
string(STRIP "${WHARF_UNIT_COMMON}" WHARF_UNIT_COMMON)
set(units "")
foreach(unit wharfd-serve.service wharfd-gateway.service wharfd-storage@.service)
  configure_file("${WH_SRC}/packaging/systemd/${unit}.in" "${gen}/systemd/${unit}" @ONLY)
  list(APPEND units "${gen}/systemd/${unit}")
endforeach()
file(INSTALL ${units} DESTINATION "${unitdir}")

# wharf.pc: the one template (cmake/wharf.pc.in; the build tree's copy is configured from it
# too), with this install's prefix.
set(CMAKE_INSTALL_LIBDIR "${WH_LIBDIR}")
set(CMAKE_INSTALL_INCLUDEDIR "${WH_INCLUDEDIR}")
set(PROJECT_VERSION "${WH_VERSION}")
configure_file("${WH_SRC}/cmake/wharf.pc.in" "${gen}/wharf.pc" @ONLY)
file(INSTALL "${gen}/wharf.pc" DESTINATION "${p}/${WH_LIBDIR}/pkgconfig")

# The service user and its data directory (systemd-sysusers, systemd-tmpfiles).
file(INSTALL "${WH_SRC}/packaging/sysusers.d/wharfd.conf" DESTINATION "${p}/lib/sysusers.d")
file(INSTALL "${WH_SRC}/packaging/tmpfiles.d/wharfd.conf" DESTINATION "${p}/lib/tmpfiles.d")

file(GLOB etc_files "${WH_SRC}/etc/wharfd-*.conf")
if(etc_files)
  file(INSTALL ${etc_files} DESTINATION "${WHARF_CONFDIR}")
endif()
file(REMOVE_RECURSE "${gen}")
