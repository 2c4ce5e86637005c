#!/usr/bin/env python3
# SPDX-License-Identifier: CC0-1.0
"""Synthesize the small spoken-word dataset that ships with garden (``speech/``).

Every utterance is text written for garden, spoken by eSpeak NG (Debian's ``espeak-ng``
package), resampled from eSpeak's 22,050 Hz to 16 kHz mono with SciPy and written as 16-bit
WAV with its transcript in ``speech/transcripts.csv`` (``file,transcript,speaker,label``;
``label`` is the keyword, or ``_unknown_`` for a sentence, as in Speech Commands). The
audio and this script are dedicated to the public domain (CC0-1.0); see docs/speech_data.md.

    apt-get install -y espeak-ng
    python tools/data/make_speech_data.py            # writes garden/tasks/data/speech/
    python tools/data/make_speech_data.py --out DIR  # or somewhere else

The same espeak-ng version writes the same files; a different version may differ slightly.
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import tempfile

import numpy as np
import soundfile
from scipy.signal import resample_poly

#: where the shipped data lives: garden's built-in tasks read it from the installed package
HERE = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "garden", "tasks", "data"))
RATE = 16_000

#: speaker name -> eSpeak NG voice (language + variant): three accents, male and female
VOICES = {
    "us_m": "en-us+m3",
    "us_f": "en-us+f3",
    "gb_m": "en-gb+m1",
    "gb_f": "en-gb+f2",
    "scot_m": "en-gb-scotland+m4",
    "carib_f": "en-029+f4",
}
DIGITS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
COMMANDS = ("yes", "no", "up", "down", "left", "right", "on", "off", "stop", "go")
SENTENCES = (
    "turn the light on", "open the door", "three two one", "stop the music", "go left then right",
    "the red ball", "call me later", "play it again", "close the window", "a blue square",
    "one more time", "good morning", "it is cold", "read the book", "the green circle",
    "count to five", "move it up", "switch it off", "how many squares", "nine and six",
    "look at the sky", "wait for me", "take two steps", "say it slowly",
)
#: words per minute: a slow and a normal reading speed for the digits
SPEEDS = (140, 175)


def utterances() -> list[tuple[str, str, str, int]]:
    """(file stem, transcript, speaker, words per minute) for every utterance, in file order."""
    rows = []
    for speaker in VOICES:
        for speed in SPEEDS:
            rows += [(f"digit_{w}_{speaker}_{speed}", w, speaker, speed) for w in DIGITS]
        rows += [(f"command_{w}_{speaker}", w, speaker, 160) for w in COMMANDS]
    speakers = list(VOICES)
    for i, sentence in enumerate(SENTENCES):
        speaker = speakers[i % len(speakers)]
        rows.append((f"sentence_{i:02d}_{speaker}", sentence, speaker, 160))
    return rows


def synthesize(text: str, voice: str, speed: int) -> np.ndarray:
    """eSpeak NG's waveform for ``text`` at 16 kHz, float in [-1, 1], silence trimmed."""
    with tempfile.TemporaryDirectory() as tmp:
        wav = os.path.join(tmp, "out.wav")
        subprocess.run(["espeak-ng", "-v", voice, "-s", str(speed), "-w", wav, text], check=True)
        audio, rate = soundfile.read(wav, dtype="float64")
    audio = resample_poly(audio, RATE, rate)
    loud = np.flatnonzero(np.abs(audio) > 0.02)
    margin = RATE // 20
    return audio[max(0, loud[0] - margin): loud[-1] + margin]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(HERE, "speech"))
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    rows = []
    for stem, text, speaker, speed in utterances():
        audio = synthesize(text, VOICES[speaker], speed)
        soundfile.write(os.path.join(args.out, f"{stem}.wav"), audio, RATE, subtype="PCM_16")
        rows.append((f"{stem}.wav", text, speaker, text if text in DIGITS + COMMANDS else "_unknown_"))
    with open(os.path.join(args.out, "transcripts.csv"), "w", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(("file", "transcript", "speaker", "label"))
        writer.writerows(rows)
    seconds = sum(soundfile.info(os.path.join(args.out, r[0])).duration for r in rows)
    print(f"{len(rows)} utterances, {seconds:.0f} s of audio, written to {args.out}")


if __name__ == "__main__":
    main()
