# Sourced by the ncu scripts (ncu_unseen_regrets.sh, ncu_pipe_ceilings.sh) from the repository root:
# checks OUT, starts $OUT/summary.txt with the GPU's name, builds the app into /tmp/b (sm_90, no
# Python module) and sets S (the summary), T0 (the start) and F (the flashtune binary). A failed
# configure or build leaves its last lines in the summary and exits 1.
OUT="${OUT:?OUT=dir}"; mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
S=$OUT/summary.txt
nvidia-smi --query-gpu=name --format=csv,noheader > $S
T0=$(date +%s)
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DFLASHTUNE_PYTHON=OFF > /tmp/cfg.log 2>&1 || { tail -20 /tmp/cfg.log >> $S; exit 1; }
cmake --build /tmp/b -j16 --target flashtune > /tmp/build.log 2>&1 || { grep -m20 error /tmp/build.log >> $S; exit 1; }
echo "build $(( $(date +%s) - T0 )) s" >> $S
F=/tmp/b/app/flashtune
