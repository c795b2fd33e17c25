# `cmake --install BUILD [--prefix DIR]`: include/memwall.h, libmemwall.a, libmemwall.so (when
# MEMWALL_SHARED), the memwall CLI, a pkg-config file (memwall.pc) and a CMake package
# (find_package(memwall) -> memwall::memwall, the shared library; memwall::memwall_static).
# Both are relocatable: they find the prefix from where they lie.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(MEMWALL_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/memwall)

install(TARGETS memwall EXPORT memwall-static-targets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  PUBLIC_HEADER DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS memwall_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(MEMWALL_SHARED)
  set_target_properties(memwall PROPERTIES EXPORT_NAME memwall_static)
  set_target_properties(memwall_shared PROPERTIES EXPORT_NAME memwall)
  install(TARGETS memwall_shared EXPORT memwall-targets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} NAMELINK_COMPONENT Unspecified)
  install(EXPORT memwall-targets NAMESPACE memwall:: DESTINATION ${MEMWALL_CMAKE_DIR})
else()
  set_target_properties(memwall PROPERTIES EXPORT_NAME memwall)
endif()
install(EXPORT memwall-static-targets NAMESPACE memwall:: DESTINATION ${MEMWALL_CMAKE_DIR})

set(MEMWALL_STATIC_TARGET memwall_static)
if(NOT MEMWALL_SHARED)
  set(MEMWALL_STATIC_TARGET memwall)
endif()
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/memwall-config.cmake.in
  ${PROJECT_BINARY_DIR}/memwall-config.cmake INSTALL_DESTINATION ${MEMWALL_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/memwall-config-version.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/memwall-config.cmake
  ${PROJECT_BINARY_DIR}/memwall-config-version.cmake DESTINATION ${MEMWALL_CMAKE_DIR})

# pkg-config: the prefix is found from the .pc file's own folder (${pcfiledir}).
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(MEMWALL_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  set(MEMWALL_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
else()
  file(RELATIVE_PATH MEMWALL_PC_UP "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
  set(MEMWALL_PC_PREFIX "\${pcfiledir}/${MEMWALL_PC_UP}")
  set(MEMWALL_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
endif()
if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(MEMWALL_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
else()
  set(MEMWALL_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
set(MEMWALL_PC_HTTPLIB "")
if(MEMWALL_SERVER)
  set(MEMWALL_PC_HTTPLIB "libmicrohttpd")
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/memwall.pc.in ${PROJECT_BINARY_DIR}/memwall.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/memwall.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
