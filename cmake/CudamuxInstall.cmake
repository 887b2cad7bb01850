# Install helpers (issue 8). Included by the top-level CMakeLists.txt before any
# subdirectory, so a component's own CMakeLists.txt may call them for its targets:
#
#   cudamux_install_library(<target> [EXPORT <name>])
#                                      lib/ (SONAME link + dev symlink); with EXPORT,
#                                      find_package(cudamux) defines cudamux::<name>
#   cudamux_install_plugin(<target>)   lib/cudamux/plugins/libcudamux-<name>.so
#   cudamux_install_runtime(<target>)  lib/cudamux/ (files plugins load at run time,
#                                      e.g. the mock's libcudamux-device.so)
#   cudamux_install_tool(<target>)     bin/
#
# Each sets the target's INSTALL_RPATH relative to $ORIGIN, so the installed tree works
# wherever it is unpacked. cmake/install.cmake (included last) installs the project's
# known targets with these helpers when nobody did it before.
include(GNUInstallDirs)

# Fixed "lib", not lib64 or a multiarch dir: the core finds plugins at
# <dir of libcudamux-core.so.0>/cudamux/plugins and the tools find lib/ from bin/.
set(CUDAMUX_INSTALL_LIBDIR lib)
set(CUDAMUX_INSTALL_PLUGINDIR ${CUDAMUX_INSTALL_LIBDIR}/cudamux/plugins)
set(CUDAMUX_INSTALL_RUNTIMEDIR ${CUDAMUX_INSTALL_LIBDIR}/cudamux)
set(CUDAMUX_INSTALL_CMAKEDIR ${CUDAMUX_INSTALL_LIBDIR}/cmake/cudamux)

function(_cudamux_mark_installed target)
  set_property(GLOBAL APPEND PROPERTY CUDAMUX_INSTALLED_TARGETS ${target})
endfunction()

function(cudamux_target_installed target out)
  get_property(_done GLOBAL PROPERTY CUDAMUX_INSTALLED_TARGETS)
  if(target IN_LIST _done)
    set(${out} TRUE PARENT_SCOPE)
  else()
    set(${out} FALSE PARENT_SCOPE)
  endif()
endfunction()

function(cudamux_install_library target)
  cmake_parse_arguments(ARG "" "EXPORT" "" ${ARGN})
  set_target_properties(${target} PROPERTIES INSTALL_RPATH "$ORIGIN")
  install(TARGETS ${target}
    LIBRARY DESTINATION ${CUDAMUX_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT dev)
  if(ARG_EXPORT)
    # find_package(cudamux) then defines cudamux::<EXPORT> (cmake/install.cmake writes it).
    set_property(GLOBAL APPEND PROPERTY CUDAMUX_EXPORTED_LIBRARIES "${target}:${ARG_EXPORT}")
  endif()
  _cudamux_mark_installed(${target})
endfunction()

function(cudamux_install_plugin target)
  # Plugins link the core's dependencies in lib/ and runtime files in lib/cudamux/.
  set_target_properties(${target} PROPERTIES INSTALL_RPATH "$ORIGIN/../..;$ORIGIN/..")
  install(TARGETS ${target} LIBRARY DESTINATION ${CUDAMUX_INSTALL_PLUGINDIR} COMPONENT runtime)
  _cudamux_mark_installed(${target})
endfunction()

function(cudamux_install_runtime target)
  set_target_properties(${target} PROPERTIES INSTALL_RPATH "$ORIGIN;$ORIGIN/..")
  install(TARGETS ${target} LIBRARY DESTINATION ${CUDAMUX_INSTALL_RUNTIMEDIR} COMPONENT runtime
    NAMELINK_SKIP)
  _cudamux_mark_installed(${target})
endfunction()

function(cudamux_install_tool target)
  set_target_properties(${target} PROPERTIES INSTALL_RPATH "$ORIGIN/../${CUDAMUX_INSTALL_LIBDIR}")
  install(TARGETS ${target} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
  _cudamux_mark_installed(${target})
endfunction()
