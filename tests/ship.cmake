# Shipping: the examples, the container image's build steps, and a new user's
# first `make run`.

# examples/: every configuration passes `profd check config` (and promtool, when
# installed), the Kubernetes ConfigMap's configuration, the systemd unit
# (systemd-analyze, when installed), and the demo Go program builds and serves every
# profile type
add_test(NAME examples_profd_config
  COMMAND profd check config ${PROJECT_SOURCE_DIR}/examples/profd.yml)
add_test(NAME examples_prometheus_config
  COMMAND profd check config ${PROJECT_SOURCE_DIR}/examples/prometheus/profd.yml
          ${PROJECT_SOURCE_DIR}/examples/prometheus/prometheus.yml)
set_tests_properties(examples_profd_config examples_prometheus_config PROPERTIES LABELS unit)
add_test(NAME examples_check
  COMMAND ${PROJECT_SOURCE_DIR}/examples/check.sh $<TARGET_FILE:profd>)
set_tests_properties(examples_check PROPERTIES LABELS integration TIMEOUT 300)

# the Dockerfile's build stage run here without Docker (a release build of its own),
# and its runtime stage's packages checked against what the binary loads
add_test(NAME integration_dockerfile
  COMMAND ${PROJECT_SOURCE_DIR}/tests/integration/dockerfile.sh ${PROJECT_SOURCE_DIR})
# (both build profd again with two jobs. They hold one ctest slot each, not two: a
# test that asks for two waits until two are free, which under ctest -j3 is only
# once every other test has ended, so both ran last, one after the other, on a
# machine left otherwise idle for two minutes; started first, as their cost puts
# them, they build while the other tests run)
set_tests_properties(integration_dockerfile PROPERTIES LABELS integration TIMEOUT 900)

# `make run` on a fresh clone: builds, starts, profd's own profiles and the demo's
# appear, `/` is served, and a SIGTERM stops it cleanly
add_test(NAME integration_first_run
  COMMAND ${PROJECT_SOURCE_DIR}/tests/integration/first_run.sh ${PROJECT_SOURCE_DIR})
set_tests_properties(integration_first_run PROPERTIES LABELS integration TIMEOUT 900)
