"""The live run page `starter.py ui` serves: its server (server.py) and its static files
(static/: plain HTML, JavaScript and CSS, no build step)."""
