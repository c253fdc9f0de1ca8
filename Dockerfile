# profd container image. Build stage uses the project's own dependency script;
# the runtime stage carries the binary and its shared libraries only.
FROM debian:bookworm AS build
WORKDIR /src
COPY scripts/deps.sh scripts/deps.sh
RUN ./scripts/deps.sh
COPY . .
RUN cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DPD_TESTS=OFF \
 && cmake --build build/release -j"$(nproc)"

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends libprotobuf-c1 zlib1g libzstd1 libpcre2-8-0 libyaml-0-2 libcurl4 libmicrohttpd12 \
 && rm -rf /var/lib/apt/lists/* && useradd --system --uid 10001 profd
COPY --from=build /src/build/release/profd /usr/local/bin/profd
USER profd
ENTRYPOINT ["/usr/local/bin/profd"]
CMD ["--help"]
