# profd's container image.
#
#   docker build -t profd .
#   docker run -p 10902:10902 -v profd-data:/data profd
#   docker run -p 10902:10902 -v $PWD/profd.yml:/etc/profd/profd.yml:ro profd
#   docker run --rm profd check config /etc/profd/profd.yml
#
# The build stage installs the build dependencies with the project's own
# scripts/deps.sh and builds the release binary; the runtime stage holds that binary,
# the shared libraries it links (ldd), the three it loads with dlopen on first use
# (libcurl.so.4 for scraping, libmicrohttpd.so.12 for the HTTP server,
# libdebuginfod.so.1 for asking debuginfod servers) and the one
# glibc's backtrace() loads (libgcc_s.so.1, for profd's profiles of itself), and
# examples/profd.yml as the default configuration. tests/integration/dockerfile.sh
# runs the build stage's steps and checks the runtime stage's packages without Docker:
# keep the build stage's RUN lines relative to its WORKDIR.

FROM debian:bookworm AS build
WORKDIR /src
COPY scripts/deps.sh scripts/deps.sh
RUN ./scripts/deps.sh
COPY . .
RUN cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DPD_TESTS=OFF -DPD_BENCH=OFF >/dev/null \
 && cmake --build build/release -j"$(nproc)" --target profd \
 && ./build/release/profd --version

FROM debian:bookworm-slim
# libc6 comes with the base image; libgcc-s1 is loaded by backtrace() for profd's own
# CPU and heap profiles; ca-certificates lets profd scrape https targets; libre2-9
# (regexes) is C++, so profd links libstdc++6 too; libcrypt1 checks the web
# configuration's bcrypt hashes; libc-ares2 resolves dns_sd_configs; libgvc6 (with
# libcgraph6, libcdt5, libpathplan4, libltdl7 and libexpat1) lays out report=svg's
# call graphs; libdeflate0 inflates gzip'd profiles (zlib1g the rest).
# libjson-c5 reads the JSON bodies of pushes (speedscope, Connect, OTLP).
# libelf1 reads the build ids of uploaded debug files; libdw1, libelf1 and
# libdebuginfod1, loaded when a debuginfod server is asked (elfutils, with liblzma5
# and libbz2-1.0 for compressed sections, and libcurl3-gnutls for its downloads,
# with what that links: libgnutls30,
# libnghttp2-14, librtmp1, libssh2-1, libldap-2.5-0, the Kerberos libraries, ...)
# symbolize native profiles at query time.
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      ca-certificates libc-ares2 libcrypt1 libcurl4 libgcc-s1 libmicrohttpd12 libjson-c5 libprotobuf-c1 libre2-9 libssl3 libstdc++6 \
      libyaml-0-2 libzstd1 zlib1g libdeflate0 libgvc6 libcgraph6 libcdt5 libpathplan4 libltdl7 libexpat1 \
      libdw1 libelf1 libdebuginfod1 libcurl3-gnutls liblzma5 libbz2-1.0 \
      libbrotli1 libcom-err2 libffi8 libgmp10 libgnutls30 libgssapi-krb5-2 libhogweed6 libidn2-0 \
      libk5crypto3 libkeyutils1 libkrb5-3 libkrb5support0 libldap-2.5-0 libnettle8 libnghttp2-14 \
      libp11-kit0 libpsl5 librtmp1 libsasl2-2 libssh2-1 libtasn1-6 libunistring2 \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 profd \
 && useradd --system --uid 10001 --gid profd --home-dir /data --no-create-home --shell /usr/sbin/nologin profd \
 && mkdir -p /data /etc/profd \
 && chown profd:profd /data
COPY --from=build /src/build/release/profd /bin/profd
COPY examples/profd.yml /etc/profd/profd.yml
USER profd
WORKDIR /data
VOLUME ["/data"]
EXPOSE 10902
ENTRYPOINT ["/bin/profd"]
CMD ["run", "--config.file=/etc/profd/profd.yml", "--storage.tsdb.path=/data", "--web.listen-address=:10902"]
