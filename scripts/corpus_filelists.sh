# Sourced by the scripts that read a corpus's train/val/test audio filelists (prepare_mels.sh, extract_gta_mels.sh):
# with synthetic=true, DATA_DIR defaults to data/synthetic and filelists to synthetic_audio_text_*.txt; otherwise to
# data/LJSpeech-1.1 and ljs_audio_text_*_filelist.txt, all in FILELISTS_DIR (default filelists). Sets DATA_DIR,
# FILELISTS_DIR and the array `filelists`.
FILELISTS_DIR=${FILELISTS_DIR:-filelists}
if [ "${synthetic:-false}" = true ]; then
    DATA_DIR=${DATA_DIR:-data/synthetic}
    filelists=("$FILELISTS_DIR"/synthetic_audio_text_{train,val,test}.txt)
else
    DATA_DIR=${DATA_DIR:-data/LJSpeech-1.1}
    filelists=("$FILELISTS_DIR"/ljs_audio_text_{train,val,test}_filelist.txt)
fi
