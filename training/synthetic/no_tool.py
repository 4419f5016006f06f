"""Requests no offered tool fits, and their answers: small talk, what the model knows, working on text the user
gives, everyday advice, and requests for a tool that is not offered.

None asks what the evaluation sets' no-tool items ask (tests/benchmarks/data/*.jsonl: a capital city, a word's
opposite or translation, the colour of the sky, a fruit of some colour, a short poem, a Python keyword, how
the assistant is) or touches set C's domains (art, ferries, tides, mountain huts, bees, lorries, bridges);
none needs arithmetic, the time, the weather or a conversion, which tools do. `tests/benchmarks/check_leakage.py`
measures how close they come.
"""

from __future__ import annotations

GREETINGS: tuple[tuple[str, str], ...] = (
    ("Good afternoon! I've got a long list today.", "Good afternoon! Let's work through it: what's first?"),
    ("morning, let's get going", "Morning! What shall we start with?"),
    ("Hello again, it's me.", "Welcome back! What can I do for you?"),
    ("Right, I have a couple of questions for you.", "Go ahead, I'm listening."),
    ("hey there, got a minute?", "Of course. What do you need?"),
    ("Evening! Sorry for the late message.", "No problem at all. What can I help with?"),
)
"""Openings of a chat."""
SMALL_TALK: tuple[tuple[str, str], ...] = (
    ("My cat knocked coffee all over my notes this morning.",
     "Oh no! I hope the notes survived. Let me know if I can help with anything."),
    ("I just got back from a long run and I'm worn out.", "Well done for getting out there! Rest and drink water."),
    ("Do you ever get tired of questions?", "Not at all: answering questions is what I'm here for."),
    ("I got the job offer I was hoping for!", "That's wonderful news, congratulations!"),
    ("It's my first day back after a week off.", "Welcome back! A short list for today can make it easier."),
    ("I'm nervous about the presentation I'm giving tomorrow.",
     "That's normal. Rehearse the first minute out loud a few times; the rest tends to follow."),
    ("My internet was down all morning, what a pain.", "That's frustrating. Good that it's back."),
    ("Can you remember what we talked about last week?",
     "I only see this conversation; I don't keep memories between chats."),
    ("What should I call you?", "Whatever you like: 'assistant' works fine."),
    ("Are you a person or a program?", "A program: an AI assistant that can use tools when they help."),
    ("I passed my driving test today!", "Congratulations! That's a big step."),
    ("Guess what, I finally fixed the squeaky door.", "Nice work! A little oil on the hinges does wonders."),
    ("Tell me a fun fact.", "Octopuses have three hearts and blue blood."),
    ("Know any good jokes?", "Why don't skeletons fight each other? They don't have the guts."),
    ("I can't decide what to have for lunch.", "How about something quick and warm, like soup and bread?"),
)
"""Small talk: news, feelings, questions about the assistant."""
CLOSINGS: tuple[tuple[str, str], ...] = (
    ("Perfect, that settles it.", "Great! Let me know if anything else comes up."),
    ("ok noted", "Noted. Anything else?"),
    ("Got it, appreciate the quick lookup.", "Any time!"),
    ("Great, that's what I needed to know.", "Glad it helped."),
    ("That covers it, talk later.", "Talk later!"),
    ("Hmm, interesting.", "It is! Anything else you'd like me to check?"),
    ("wow, ok", "Anything else you'd like to know?"),
    ("Nice one.", "Happy to help. What's next?"),
    ("Excellent, that's sorted then.", "Sorted! Shout if you need more."),
    ("Oh good, that works for me.", "Great, glad it does!"),
    ("Not ideal, but fine.", "Sorry it's not better news. Anything else I can look at?"),
    ("Alright, I'll sign off now.", "Have a good one!"),
)
"""Acknowledgements and sign-offs."""
CHITCHAT: tuple[tuple[str, str], ...] = (*GREETINGS, *SMALL_TALK, *CLOSINGS)
"""Every small-talk request."""

# (question, answer, domains whose tools might answer it: those are never offered with it)
KNOWLEDGE: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("How many legs does a spider have?", "A spider has 8 legs.", ()),
    ("What gas do plants absorb from the air?", "Plants absorb carbon dioxide from the air.", ()),
    ("Who wrote 'Romeo and Juliet'?", "William Shakespeare wrote 'Romeo and Juliet'.", ("library",)),
    ("What is the largest planet in the solar system?", "Jupiter is the largest planet in the solar system.",
     ("astronomy",)),
    ("How many continents are there?", "There are seven continents.", ("geo",)),
    ("What is the chemical symbol for gold?", "The chemical symbol for gold is Au.", ("chemistry",)),
    ("What does HTML stand for?", "HTML stands for HyperText Markup Language.", ("code", "network")),
    ("Name a mammal that can fly.", "The bat is a mammal that can fly.", ()),
    ("How many sides does a hexagon have?", "A hexagon has 6 sides.", ()),
    ("What is the tallest animal?", "The giraffe is the tallest animal.", ()),
    ("What is the main ingredient of guacamole?", "The main ingredient of guacamole is avocado.", ("food",)),
    ("How many players does a football team have on the pitch?", "Each side has 11 players on the pitch.",
     ("sports",)),
    ("Which planet is known as the Red Planet?", "Mars is known as the Red Planet.", ("astronomy",)),
    ("In what year did World War II end?", "World War II ended in 1945.", ()),
    ("What is the hardest natural substance?", "Diamond is the hardest natural substance.", ("chemistry",)),
    ("Which instrument has 88 keys?", "The piano has 88 keys.", ("music",)),
    ("What does DNA stand for?", "DNA stands for deoxyribonucleic acid.", ("genomics",)),
    ("What is the fastest land animal?", "The cheetah is the fastest land animal.", ()),
    ("What does CPU stand for?", "CPU stands for central processing unit.", ("code",)),
    ("How many strings does a standard guitar have?", "A standard guitar has 6 strings.", ("music",)),
    ("Who was the first person to walk on the Moon?", "Neil Armstrong, in 1969.", ("astronomy",)),
    ("Which organ pumps blood around the body?", "The heart pumps blood around the body.", ("health",)),
    ("What is the largest mammal?", "The blue whale is the largest mammal.", ()),
    ("Which metal is liquid at room temperature?", "Mercury is a metal that is liquid at room temperature.",
     ("chemistry",)),
    ("Why does bread go stale?",
     "It loses moisture and its starch recrystallises, which makes it hard and dry.", ("food",)),
    ("How does a microwave oven heat food?",
     "Microwaves make the water molecules in food jiggle, and that motion turns into heat.", ()),
    ("What makes popcorn pop?",
     "Water inside each kernel turns to steam; the pressure builds until the hull bursts.", ("food",)),
    ("Why do onions make you cry when you cut them?",
     "Cutting them releases a sulphur compound that irritates your eyes, so they water.", ("food",)),
    ("How do noise-cancelling headphones work?",
     "Microphones pick up outside sound and the headphones play the opposite wave, which cancels it.", ()),
    ("What does a vaccine do?",
     "It trains the immune system to recognise a germ, so the body can fight it quickly later.", ("health",)),
    ("Why do cats purr?",
     "Mostly to signal contentment, but also to soothe themselves when stressed or hurt.", ("health",)),
    ("What's the difference between a virus and a bacterium?",
     "Bacteria are living single cells that can reproduce on their own; viruses need a host cell to copy "
     "themselves.", ("health", "genomics")),
    ("How does a refrigerator keep food cold?",
     "A refrigerant absorbs heat inside as it evaporates and releases it outside when compressed.", ()),
    ("Who invented the telephone?", "Alexander Graham Bell is credited with inventing the telephone, in 1876.", ()),
    ("What is a haiku?", "A short Japanese poem of three lines with five, seven and five syllables.", ()),
    ("What does a pancreas do?",
     "It makes digestive enzymes and the hormones insulin and glucagon, which control blood sugar.",
     ("health",)),
    ("What is an offside in football?",
     "An attacker is offside when they are nearer the goal line than the ball and the second-last defender "
     "as the ball is played to them.", ("sports",)),
    ("What is a chord in music?", "Three or more notes played together, such as C, E and G for C major.",
     ("music",)),
    ("What causes hiccups?",
     "A sudden involuntary contraction of the diaphragm, followed by the vocal cords snapping shut.",
     ("health",)),
    ("What is the difference between RAM and storage?",
     "RAM holds what the computer is working on right now and is cleared at power-off; storage keeps files "
     "permanently.", ("code", "files")),
    ("Why do leaves change colour in autumn?",
     "Trees stop making chlorophyll, so the green fades and yellow and red pigments show.", ()),
    ("What is compound interest?",
     "Interest earned on both the original amount and the interest already added to it.", ("finance",)),
    ("Who discovered penicillin?", "Alexander Fleming, in 1928.", ("chemistry", "health")),
)
"""What the model knows."""
CREATIVE: tuple[tuple[str, str], ...] = (
    ("Make this sound more polite: 'Send me the report now.'",
     "Could you please send me the report when you have a moment?"),
    ("Turn these into a bullet list: milk, eggs, spinach, rice",
     "- milk\n- eggs\n- spinach\n- rice"),
    ("Fix the spelling: 'I recieved the pakage yesterday.'", "I received the package yesterday."),
    ("Shorten this: 'At this point in time we are unable to confirm the meeting.'",
     "We can't confirm the meeting yet."),
    ("Put these in alphabetical order: pear, apple, fig, cherry", "apple, cherry, fig, pear"),
    ("Rewrite in the past tense: 'She walks to work and buys a coffee.'",
     "She walked to work and bought a coffee."),
    ("Give me a catchy title for a blog post about saving energy at home.",
     "How about 'Small Switches, Big Savings: Cutting Energy Use at Home'?"),
    ("Write a one-line out-of-office message.",
     "I'm away until Monday with limited access to email; I'll reply when I'm back."),
    ("Make this friendlier: 'Your request has been denied.'",
     "Unfortunately we can't approve your request this time, but we're happy to help you find another option."),
    ("Suggest a subject line for an email inviting the team to a Friday lunch.",
     "'Team lunch this Friday: join us!'"),
    ("Say something encouraging before my exam.",
     "You've prepared well: trust yourself and take it one question at a time."),
    ("Write a short slogan for a bakery.", "Fresh from our oven to your table, every morning."),
    ("How do I get candle wax off a tablecloth?",
     "Let it harden, scrape off what you can, then iron the spot through a paper towel to lift the rest."),
    ("Any tips for keeping basil alive indoors?",
     "Give it a sunny windowsill, water when the top of the soil is dry, and pinch off the flower buds."),
    ("How can I stop my glasses fogging up with a mask on?",
     "Pinch the mask's wire snug over your nose, or tuck the top edge under the glasses."),
    ("What's a good way to remember people's names?",
     "Repeat the name back when you're introduced, and use it once more before the conversation ends."),
    ("How should I store fresh herbs?",
     "Stand soft herbs like parsley in a glass of water; wrap hardy ones like thyme in a damp paper towel "
     "in the fridge."),
    ("Is it worth learning to touch-type?", "Yes: it takes a few weeks of practice and saves time every day."),
    ("Should I batch-cook on Sundays?",
     "It can save a lot of time on weeknights, as long as you pick dishes that keep well for a few days."),
    ("Is it better to read the book before seeing the film?",
     "Many people think so: the book leaves room for your imagination, and the film can't spoil the plot."),
)
"""Work on text the user gives, and everyday advice and opinions."""
REFUSALS = (
    "Sorry, none of the tools I have can {task}, so I can't do that here.",
    "I don't have a tool to {task}, so I can't help with that one right now.",
    "That needs a tool to {task}, and none of the available tools does that.",
    "I can't {task} with the tools available to me here.",
)
"""Answers to a request for a tool that is not offered."""
